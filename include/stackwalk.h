/*
 * stackwalk.h - libstackwalk: walks call stacks the way the CLR does.
 * See stackwalk(7).
 */
#ifndef STACKWALK_H
#define STACKWALK_H

#include <stackwalk/export.h>
#include <stackwalk/status.h>
#include <stackwalk/arch.h>
#include <stackwalk/context.h>
#include <stackwalk/memory.h>
#include <stackwalk/codemap.h>
#include <stackwalk/swu.h>
#include <stackwalk/swu_eh.h>
#include <stackwalk/frame.h>
#include <stackwalk/thread.h>
#include <stackwalk/walk.h>
#include <stackwalk/dispatch.h>
#include <stackwalk/synth.h>
#include <stackwalk/target.h>
#include <stackwalk/snapshot.h>
#include <stackwalk/module.h>
#include <stackwalk/image.h>
#include <stackwalk/core.h>
#include <stackwalk/process.h>
#include <stackwalk/names.h>
#include <stackwalk/deadlock.h>
#include <stackwalk/watchdog.h>
#include <stackwalk/sampler.h>
#include <stackwalk/shadow.h>
#include <stackwalk/verify.h>
#include <stackwalk/perf.h>
#include <stackwalk/gdbjit.h>
#include <stackwalk/remote.h>
#include <stackwalk/backtrace_self.h>

#endif /* STACKWALK_H */
