/*
 * bench_svg.h - a line chart as an SVG file, with logarithmic axes: what
 * the benchmark's scaling curves need, and nothing more.
 */
#ifndef BENCH_SVG_H
#define BENCH_SVG_H

struct svg_series {
	const char *name;
	unsigned n;                     /* points; a y <= 0 is left out */
	const double *x, *y;
};

/* Write the chart to `path`; 0 on success, -1 (errno set) if it cannot. */
int svg_plot(const char *path, const char *title, const char *xlabel, const char *ylabel,
             const struct svg_series *series, unsigned nseries);

#endif /* BENCH_SVG_H */
