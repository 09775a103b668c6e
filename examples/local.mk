# Examples that use only the public API (the toy JIT, swdump and swsynth
# have their own fragments).
noinst_PROGRAMS += examples/frames-demo
examples_frames_demo_SOURCES = examples/frames_demo.c
examples_frames_demo_LDADD = libstackwalk.la
TESTS += examples/frames-demo
dist_man_MANS += man/frames-demo.1

# A profiler's use of lazy modules: samples from a signal handler, imports between them.
noinst_PROGRAMS += examples/lazy-demo
examples_lazy_demo_SOURCES = examples/lazy_demo.c
examples_lazy_demo_LDADD = libstackwalk.la
TESTS += examples/lazy-demo
dist_man_MANS += man/lazy-demo.1
