// names.cc - a C++ program for swstack-names.test: namespaces, a class
// template, functions inlined into others at -O2, and two named threads
// blocked in known calls (the worker in pause(), main joining it).
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

namespace ns {
template <typename T> struct Box {
	T value;
	__attribute__((noinline)) T wait()
	{
		pause();
		asm volatile("" ::: "memory");
		return value;
	}
	__attribute__((always_inline)) inline T get() { return wait() + 1; }
};

__attribute__((always_inline)) static inline long twice(Box<long> &b)
{
	return b.get() * 2;
}
} // namespace ns

__attribute__((noinline)) long outer(ns::Box<long> &b)
{
	long r = ns::twice(b);
	asm volatile("" ::: "memory");
	return r + 1;
}

static void *worker(void *)
{
	ns::Box<long> b{3};

	pthread_setname_np(pthread_self(), "names-worker");
	return (void *)outer(b);
}

int main()
{
	pthread_t t;

	if (pthread_create(&t, nullptr, worker, nullptr) != 0)
		return 1;
	printf("ready\n");
	fflush(stdout);
	pthread_join(t, nullptr);
	return 0;
}
