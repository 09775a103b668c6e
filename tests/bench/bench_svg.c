/*
 * bench_svg.c - log-log line charts as SVG (see bench_svg.h).  Both axes
 * span whole decades around the data, with a grid line per decade.
 */
#include <math.h>
#include <stdio.h>
#include "bench_svg.h"

#define W 720
#define H 440
#define LEFT 80
#define RIGHT 190
#define TOP 40
#define BOTTOM 60

/* As many as the plots have series: a repeated colour would join two curves. */
static const char *const colors[] = {
	"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
	"#bcbd22", "#17becf", "#000000", "#aec7e8"
};

static double px(double v, double lo, double hi, double from, double to)
{
	return from + (log10(v) - lo) / (hi - lo) * (to - from);
}

/* A decade's label: 10, 100, 1k, ..., or 0.1 below one. */
static void decade_label(char *out, size_t size, int e)
{
	static const char *const big[] = { "1", "10", "100", "1k", "10k", "100k", "1M", "10M", "100M" };

	if (e >= 0 && e < 9)
		snprintf(out, size, "%s", big[e]);
	else
		snprintf(out, size, "%g", pow(10, e));
}

int svg_plot(const char *path, const char *title, const char *xlabel, const char *ylabel,
             const struct svg_series *s, unsigned ns)
{
	double xmin = 1e300, xmax = 0, ymin = 1e300, ymax = 0;
	int x0, x1, y0, y1;
	FILE *f;

	for (unsigned i = 0; i < ns; i++)
		for (unsigned k = 0; k < s[i].n; k++) {
			if (s[i].y[k] <= 0 || s[i].x[k] <= 0)
				continue;
			xmin = fmin(xmin, s[i].x[k]);
			xmax = fmax(xmax, s[i].x[k]);
			ymin = fmin(ymin, s[i].y[k]);
			ymax = fmax(ymax, s[i].y[k]);
		}
	if (xmax <= 0)
		return -1;
	x0 = (int)floor(log10(xmin));
	x1 = (int)ceil(log10(xmax));
	y0 = (int)floor(log10(ymin));
	y1 = (int)ceil(log10(ymax));
	if (x1 == x0)
		x1++;
	if (y1 == y0)
		y1++;
	if (!(f = fopen(path, "w")))
		return -1;
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
	        "font-family=\"sans-serif\" font-size=\"12\">\n", W, H);
	fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", W, H);
	fprintf(f, "<text x=\"%d\" y=\"24\" font-size=\"15\">%s</text>\n", LEFT, title);
	for (int e = x0; e <= x1; e++) {
		double x = px(pow(10, e), x0, x1, LEFT, W - RIGHT);
		char label[16];

		decade_label(label, sizeof label, e);
		fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>\n",
		        x, TOP, x, H - BOTTOM);
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
		        x, H - BOTTOM + 18, label);
	}
	for (int e = y0; e <= y1; e++) {
		double y = px(pow(10, e), y0, y1, H - BOTTOM, TOP);
		char label[16];

		decade_label(label, sizeof label, e);
		fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
		        LEFT, y, W - RIGHT, y);
		fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", LEFT - 6, y + 4, label);
	}
	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"black\"/>\n",
	        LEFT, TOP, W - RIGHT - LEFT, H - BOTTOM - TOP);
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
	        (LEFT + W - RIGHT) / 2, H - 18, xlabel);
	fprintf(f, "<text transform=\"translate(20,%d) rotate(-90)\" text-anchor=\"middle\">%s</text>\n",
	        (TOP + H - BOTTOM) / 2, ylabel);
	for (unsigned i = 0; i < ns; i++) {
		const char *c = colors[i % (sizeof colors / sizeof colors[0])];
		int pen = 0;

		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", c);
		for (unsigned k = 0; k < s[i].n; k++) {
			if (s[i].y[k] <= 0)
				continue;
			fprintf(f, "%s%.1f,%.1f", pen++ ? " " : "",
			        px(s[i].x[k], x0, x1, LEFT, W - RIGHT), px(s[i].y[k], y0, y1, H - BOTTOM, TOP));
		}
		fprintf(f, "\"/>\n");
		for (unsigned k = 0; k < s[i].n; k++)
			if (s[i].y[k] > 0)
				fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
				        px(s[i].x[k], x0, x1, LEFT, W - RIGHT),
				        px(s[i].y[k], y0, y1, H - BOTTOM, TOP), c);
		fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"/>\n",
		        W - RIGHT + 14, TOP + 10 + 20 * (int)i, W - RIGHT + 34, TOP + 10 + 20 * (int)i, c);
		fprintf(f, "<text x=\"%d\" y=\"%d\">%s</text>\n", W - RIGHT + 40, TOP + 14 + 20 * (int)i,
		        s[i].name);
	}
	fprintf(f, "</svg>\n");
	return fclose(f) == 0 ? 0 : -1;
}
