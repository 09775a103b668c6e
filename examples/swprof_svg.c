/*
 * swprof_svg.c - the flame graph: one self-contained SVG, boxes as wide as
 * their share of the samples, callers below callees.  A script inside it
 * (no network, no other file) makes it interactive in a browser: click a
 * box to zoom to it, "Reset zoom" or Escape to go back, "Search" or
 * Ctrl-F to highlight the frames a regular expression matches and see
 * their share of the samples.  Without scripts (an image viewer) it is the
 * static graph with tooltips.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "swprof.h"

/* One node of the flame graph: a frame name under its caller. */
typedef struct node {
	char *name;
	unsigned long count;
	struct node *child, *sibling;
} node;

static node *child_of(node *parent, const char *name, size_t len)
{
	node *n;

	for (n = parent->child; n; n = n->sibling)
		if (strlen(n->name) == len && !memcmp(n->name, name, len))
			return n;
	n = calloc(1, sizeof *n);
	if (!n || !(n->name = strndup(name, len))) {
		free(n);
		return NULL;
	}
	n->sibling = parent->child;
	parent->child = n;
	return n;
}

static void xml_text(FILE *f, const char *s, size_t max)
{
	for (size_t i = 0; i < max && s[i]; i++) {
		switch (s[i]) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(s[i], f);
		}
	}
}

/*
 * Layout: boxes ROW pixels high, the root at the bottom, two heading rows
 * on top (the summary and buttons; what the pointer is on, or what a
 * search matched).  Labels are 11-pixel monospace, about CHAR_W pixels a
 * character: a box shows as much of its name as fits, ".." marking a cut.
 * The script repeats the label rule for zoomed boxes.
 */
enum { SVG_WIDTH = 1200, ROW = 17, HEAD = 40 };
#define CHAR_W 6.7
#define MIN_LABEL_W 22.0
/* Boxes narrower than this are left out: even zoomed far in they would be specks. */
#define MIN_BOX_W 0.02

static void svg_label(FILE *f, const char *name, double x, unsigned y, double w)
{
	size_t fit = (size_t)((w - 6) / CHAR_W), len = strlen(name);

	fprintf(f, "<text x=\"%.2f\" y=\"%u\">", x + 3, y + 12);
	if (w < MIN_LABEL_W || fit < 3)
		;
	else if (len <= fit)
		xml_text(f, name, len);
	else {
		xml_text(f, name, fit - 2);
		fputs("..", f);
	}
	fputs("</text>", f);
}

static void svg_node(FILE *f, const node *n, double x, unsigned depth, unsigned max_depth,
                     double scale, unsigned long total)
{
	double w = (double)n->count * scale, cx = x;
	unsigned hue = 0, y = HEAD + (max_depth - depth) * ROW;

	if (w < MIN_BOX_W)
		return;
	for (const char *c = n->name; *c; c++)
		hue = hue * 31 + (unsigned char)*c;
	/* data-x, data-w: the box at full width; data-d: its depth (the script's zoom). */
	fprintf(f, "<g class=\"f\" data-x=\"%.4f\" data-w=\"%.4f\" data-d=\"%u\"><title>", x, w,
	        depth);
	xml_text(f, n->name, 4096);
	fprintf(f, " (%lu samples, %.2f%%)</title><rect x=\"%.2f\" y=\"%u\" width=\"%.2f\" "
	        "height=\"%d\" fill=\"rgb(%u,%u,%u)\" rx=\"2\"/>", n->count,
	        total ? 100.0 * (double)n->count / (double)total : 0.0, x, y, w, ROW - 1,
	        205 + hue % 50, 80 + (hue >> 8) % 130, 40 + (hue >> 16) % 50);
	svg_label(f, n->name, x, y, w);
	fprintf(f, "</g>\n");
	for (const node *c = n->child; c; c = c->sibling) {
		svg_node(f, c, cx, depth + 1, max_depth, scale, total);
		cx += (double)c->count * scale;
	}
}

static unsigned node_depth(const node *n)
{
	unsigned d = 0;

	for (const node *c = n->child; c; c = c->sibling) {
		unsigned cd = node_depth(c);

		if (cd > d)
			d = cd;
	}
	return d + 1;
}

static void free_node(node *n)
{
	while (n) {
		node *next = n->sibling;

		free_node(n->child);
		free(n->name);
		free(n);
		n = next;
	}
}

/*
 * Zoom: the clicked box and what it calls fill the width, its callers
 * span it, the rest hides.  Search: matching boxes turn magenta; their
 * share counts each sample once (a match inside a match adds nothing).
 */
static const char svg_script[] =
"<script type=\"text/ecmascript\"><![CDATA[\n"
"(function () {\n"
"var W = %d, CHAR_W = %g, MIN_LABEL_W = %g;\n"
"var boxes = Array.prototype.slice.call(document.querySelectorAll('g.f'));\n"
"var detail = document.getElementById('detail'), zoomed = null;\n"
"function num(g, a) { return parseFloat(g.getAttribute('data-' + a)); }\n"
"function nameOf(g) { return g.querySelector('title').textContent.replace(/ \\([^()]*\\)$/, ''); }\n"
"function place(g, x, w) {\n"
"  var r = g.querySelector('rect'), t = g.querySelector('text'), name = nameOf(g);\n"
"  var fit = Math.floor((w - 6) / CHAR_W);\n"
"  r.setAttribute('x', x.toFixed(2)); r.setAttribute('width', w.toFixed(2));\n"
"  t.setAttribute('x', (x + 3).toFixed(2));\n"
"  t.textContent = w < MIN_LABEL_W || fit < 3 ? '' :\n"
"    name.length <= fit ? name : name.substring(0, fit - 2) + '..';\n"
"  g.style.display = '';\n"
"}\n"
"function zoom(g) {\n"
"  var x0 = num(g, 'x'), w0 = num(g, 'w'), d0 = num(g, 'd'), k = W / w0, eps = 1e-3;\n"
"  zoomed = g;\n"
"  boxes.forEach(function (b) {\n"
"    var x = num(b, 'x'), w = num(b, 'w'), d = num(b, 'd');\n"
"    if (d >= d0 && x >= x0 - eps && x + w <= x0 + w0 + eps) place(b, (x - x0) * k, w * k);\n"
"    else if (d < d0 && x <= x0 + eps && x + w >= x0 + w0 - eps) place(b, 0, W);\n"
"    else b.style.display = 'none';\n"
"  });\n"
"}\n"
"function reset() {\n"
"  zoomed = null;\n"
"  boxes.forEach(function (b) { place(b, num(b, 'x'), num(b, 'w')); });\n"
"}\n"
"function search(re) {\n"
"  var spans = [], total = W, covered = 0, end = -1;\n"
"  boxes.forEach(function (b) {\n"
"    var hit = re !== null && re.test(nameOf(b)), r = b.querySelector('rect');\n"
"    if (!r.hasAttribute('data-fill')) r.setAttribute('data-fill', r.getAttribute('fill'));\n"
"    r.setAttribute('fill', hit ? 'rgb(230,0,230)' : r.getAttribute('data-fill'));\n"
"    if (hit) spans.push([num(b, 'x'), num(b, 'x') + num(b, 'w')]);\n"
"  });\n"
"  spans.sort(function (a, b) { return a[0] - b[0]; });\n"
"  spans.forEach(function (s) {\n"
"    if (s[1] <= end) return;\n"
"    covered += s[1] - Math.max(s[0], end); end = s[1];\n"
"  });\n"
"  detail.textContent = re === null ? ' ' :\n"
"    'Matched ' + re.source + ': ' + (100 * covered / total).toFixed(2) + '%% of the samples';\n"
"}\n"
"function ask() {\n"
"  var s = window.prompt('Search (regular expression):', '');\n"
"  if (s === null || s === '') { search(null); return; }\n"
"  try { search(new RegExp(s)); } catch (e) { detail.textContent = 'Bad expression: ' + s; }\n"
"}\n"
"boxes.forEach(function (b) {\n"
"  b.style.cursor = 'pointer';\n"
"  b.addEventListener('click', function () { zoom(b); });\n"
"  b.addEventListener('mouseover', function () {\n"
"    detail.textContent = b.querySelector('title').textContent; });\n"
"});\n"
"document.getElementById('reset').addEventListener('click', reset);\n"
"document.getElementById('search').addEventListener('click', ask);\n"
"document.addEventListener('keydown', function (e) {\n"
"  if ((e.ctrlKey || e.metaKey) && e.key === 'f') { e.preventDefault(); ask(); }\n"
"  else if (e.key === 'Escape') { reset(); search(null); }\n"
"});\n"
"})();\n"
"]]></script>\n";

int write_svg(const char *path, char **lines, size_t nlines, const unsigned long *counts,
              unsigned long total, const char *heading)
{
	node root = { .name = (char *)"all", .count = total };
	unsigned depth;
	int ok = 0;
	FILE *f;

	for (size_t i = 0; i < nlines; i++) {
		node *at = &root;
		const char *p = lines[i];

		while (at && *p) {
			size_t len = strcspn(p, ";");

			at = child_of(at, p, len);
			if (at)
				at->count += counts[i];
			p += len + (p[len] == ';');
		}
	}
	depth = node_depth(&root);
	f = fopen(path, "w");
	if (f) {
		fprintf(f, "<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
		        "width=\"%d\" height=\"%u\" font-family=\"monospace\" font-size=\"11\">\n"
		        "<rect width=\"100%%\" height=\"100%%\" fill=\"#fdfdf5\"/>\n",
		        SVG_WIDTH, HEAD + (depth + 1) * ROW);
		fprintf(f, "<text x=\"3\" y=\"16\" font-size=\"13\">");
		xml_text(f, heading, 512);
		fprintf(f, "</text>\n<text id=\"reset\" x=\"%d\" y=\"16\" font-size=\"13\" "
		        "style=\"cursor:pointer\">Reset zoom</text>\n<text id=\"search\" x=\"%d\" "
		        "y=\"16\" font-size=\"13\" style=\"cursor:pointer\">Search</text>\n"
		        "<text id=\"detail\" x=\"3\" y=\"33\"> </text>\n",
		        SVG_WIDTH - 150, SVG_WIDTH - 55);
		svg_node(f, &root, 0, 0, depth, total ? (double)SVG_WIDTH / (double)total : 0, total);
		fprintf(f, svg_script, SVG_WIDTH, CHAR_W, MIN_LABEL_W);
		fprintf(f, "</svg>\n");
		ok = !ferror(f);
		ok = fclose(f) == 0 && ok;
	}
	free_node(root.child);
	return ok;
}
