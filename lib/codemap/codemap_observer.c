/*
 * codemap_observer.c - the list of a code map's observers.
 *
 * A singly linked list of the callers' own records: registering one
 * allocates nothing, so it cannot fail for want of memory.  It is short
 * (a perf emitter, a gdb emitter), so a walk of it is all it needs.
 */
#include "util.h"
#include "codemap_observer.h"

sw_status swi_codemap_observer_link(sw_codemap_observer **head, sw_codemap_observer *obs)
{
	for (sw_codemap_observer *o = *head; o; o = o->next)
		if (o == obs)
			return SW_E_EXISTS;
	obs->next = *head;
	*head = obs;
	return SW_OK;
}

sw_status swi_codemap_observer_unlink(sw_codemap_observer **head, sw_codemap_observer *obs)
{
	for (sw_codemap_observer **p = head; *p; p = &(*p)->next) {
		if (*p == obs) {
			*p = obs->next;
			obs->next = NULL;
			return SW_OK;
		}
	}
	return SW_E_NOTFOUND;
}

void swi_codemap_notify(sw_codemap_observer *head, sw_codemap_event event, const sw_code_info *info)
{
	for (sw_codemap_observer *o = head; o; o = o->next)
		o->notify(o->data, event, info);
}
