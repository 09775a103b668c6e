/*
 * codemap_observer.h (internal) - the code map's list of observers.
 *
 * The list lives in the map and changes only under the map's writer
 * lock; these helpers are what the map does with it.
 */
#ifndef SW_LIB_CODEMAP_OBSERVER_H
#define SW_LIB_CODEMAP_OBSERVER_H

#include <stackwalk/codemap.h>

/* Put obs first on the list; SW_E_EXISTS if it is on it already. */
sw_status swi_codemap_observer_link(sw_codemap_observer **head, sw_codemap_observer *obs);

/* Take obs off the list; SW_E_NOTFOUND if it is not on it. */
sw_status swi_codemap_observer_unlink(sw_codemap_observer **head, sw_codemap_observer *obs);

/* Tell every observer on the list. */
void swi_codemap_notify(sw_codemap_observer *head, sw_codemap_event event, const sw_code_info *info);

#endif /* SW_LIB_CODEMAP_OBSERVER_H */
