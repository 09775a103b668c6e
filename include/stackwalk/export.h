/*
 * export.h - the export macro and the library's version.
 *
 * The library is built with -fvisibility=hidden; only declarations marked
 * SW_API are exported from the shared object.
 */
#ifndef STACKWALK_EXPORT_H
#define STACKWALK_EXPORT_H

#if defined(SW_BUILDING_LIBRARY) && defined(__GNUC__)
#define SW_VISIBILITY_DEFAULT __attribute__((visibility("default")))
#define SW_API SW_VISIBILITY_DEFAULT
#else
#define SW_API
#endif

#define SW_VERSION_MAJOR 0
#define SW_VERSION_MINOR 1
#define SW_VERSION_PATCH 0

#endif /* STACKWALK_EXPORT_H */
