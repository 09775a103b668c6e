/*
 * hang_report.h - the storage behind sw_hang_report: flat arrays and one
 * string pool, so that a report built in one process (the watchdog's
 * helper) crosses a pipe as bytes and is read back, checked, in another.
 */
#ifndef SW_TARGET_HANG_REPORT_H
#define SW_TARGET_HANG_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stackwalk.h>

#define SWI_HANG_MAX_THREADS 65536
#define SWI_HANG_MAX_FRAMES  1024       /* per thread */
#define SWI_HANG_MAX_BYTES   (256u << 20) /* a serialized report */

struct swi_hang_thread {
	int tid;
	int state;
	int64_t syscall;
	uint32_t wchan;                 /* pool offset; 0 for none */
	uint32_t cpu_permille;
	uint64_t cpu_ns;
	int32_t cls, lock_kind;
	uint64_t lock;
	int32_t owner, cycle;
	uint32_t first_frame, nframes;
	int32_t walk_status;
	int32_t behind;                 /* the cycle its wait chain leads into, or -1 */
};

struct swi_hang_frame {
	uint64_t pc, offset;
	uint32_t function, module;      /* pool offsets; 0 for none */
};

struct swi_hang_cycle {
	uint32_t first, length;         /* into members */
};

struct sw_hang_report {
	uint32_t arch;
	struct swi_hang_thread *threads;
	size_t nthreads;
	struct swi_hang_frame *frames;
	size_t nframes, frames_cap;
	struct swi_hang_cycle *cycles;
	size_t ncycles;
	uint32_t *members;              /* thread indexes, cycle after cycle */
	uint64_t *member_locks;         /* the lock each member waits on */
	size_t nmembers;
	char *pool;                     /* strings; offset 0 is "" and means none */
	size_t pool_len, pool_cap;
};

sw_hang_report *swi_hang_report_new(sw_arch arch, size_t nthreads);
/* Add a string to the pool: its offset, 0 for NULL or on failure (*failed set). */
uint32_t swi_hang_report_string(sw_hang_report *r, const char *s, int *failed);
sw_status swi_hang_report_add_frame(sw_hang_report *r, const struct swi_hang_frame *f);

/* Serialize into a malloc'd buffer; read one back (SW_E_BADMETA if malformed). */
sw_status swi_hang_report_serialize(const sw_hang_report *r, unsigned char **buf, size_t *len);
sw_status swi_hang_report_deserialize(const unsigned char *buf, size_t len, sw_hang_report **out);

#endif /* SW_TARGET_HANG_REPORT_H */
