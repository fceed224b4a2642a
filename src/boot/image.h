/* boot/image.h - the image store of network-boot provisioning (docs/provisioning.md "Images"):
 * ramdisk kernels and initrds and disk images, each a file kept under the data dir with its
 * size and sha256 recorded when it was added, served by the boot service (boot_server.h) and
 * managed with `fleetplane image add|list|rm`.
 *
 * Layout: <dir>/<name>/image (the bytes, mode 0644) and <dir>/<name>/meta.json ({"name",
 * "sha256" (64 lowercase hex), "sizeBytes", "addedAt" (RFC 3339 UTC)}). An image is added
 * complete or not at all: it is copied into a temporary directory in <dir> (hashed while
 * copying, fsync'd), then renamed into place; a replaced image's old directory is renamed
 * away first and removed after, so a download in flight keeps reading the old bytes through
 * its open descriptor. Several processes may add and remove at once (rename is atomic); the
 * names they race for are last-writer-wins. */
#ifndef FP_BOOT_IMAGE_H
#define FP_BOOT_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "core/codec.h"

#define IMAGE_NAME_MAX 63
#define IMAGE_SHA256_HEX 64
#define IMAGE_MAX_COUNT 4096 /* images listed at most */

struct image_info {
	char name[IMAGE_NAME_MAX + 1];
	char sha256[IMAGE_SHA256_HEX + 1];
	int64_t size;     /* bytes */
	int64_t added_ms; /* wall ms */
};

/* Image names are checked by image_name_validate (core/codec.h: the codec checks
 * spec.provision.image by the same rule). */

/* Copies the regular file src into the store as name (created, or replaced when replace is 1;
 * FP_EEXIST otherwise), recording its size and sha256 (libsodium crypto_hash_sha256) and now_ms;
 * *out (may be NULL) receives what was recorded. dir is created (0755) when absent. Errors:
 * FP_EINVAL (bad name, src not a regular file), FP_EEXIST, FP_EIO (with the path and
 * strerror). Blocks for the copy (seconds per GiB). */
int image_add(const char *dir, const char *name, const char *src, int replace, int64_t now_ms,
	      struct image_info *out, char *err, size_t errlen);

/* Reads name's record into *out. FP_ENOTFOUND ("image NAME not found"), FP_EINVAL (bad name),
 * FP_EPARSE (a meta.json that does not parse). */
int image_get(const char *dir, const char *name, struct image_info *out, char *err, size_t errlen);

/* Opens name's bytes for reading: *fd (O_RDONLY|O_CLOEXEC; the caller closes it) and its
 * record in *out. The file's size must equal the recorded size, else FP_EIO ("image NAME: size
 * on disk N differs from the recorded M"); a file whose bytes were changed in place after
 * image_add keeps its size and is served as it is - the deploy agent's checksum check is what
 * catches it. Errors as image_get. */
int image_open(const char *dir, const char *name, int *fd, struct image_info *out, char *err,
	       size_t errlen);

/* Every image in dir, sorted by name: *out a new array (caller frees with free()) of *n
 * records, at most IMAGE_MAX_COUNT; entries that are not images (temporary directories, a
 * broken meta.json) are skipped. A missing dir is an empty list. FP_EIO otherwise. */
int image_list(const char *dir, struct image_info **out, size_t *n, char *err, size_t errlen);

/* Removes name (its directory). FP_ENOTFOUND, FP_EINVAL, FP_EIO. */
int image_remove(const char *dir, const char *name, char *err, size_t errlen);

#endif
