/* agent/deploy.h - `fleetplane agent deploy` (issue 11, the boot contract "Agent HTTP calls"):
 * GET /boot/deploy, choose the disk, stream the image onto it with libcurl and pwrite while
 * hashing it (libsodium crypto_hash_sha256), verify size and sha256 (on a mismatch the first
 * MiB is zeroed so the half-written image cannot boot), fsync, re-read the partition table
 * (BLKRRPART), find the FAT partition labelled CIDATA and write the NoCloud seed (meta-data,
 * user-data) into it, then POST /boot/deployed.
 *
 * The disk may be a regular file (tests, image building): no BLKRRPART then, the partition is
 * found through the MBR at offset 446, and the seed is written with mtools (`mcopy -i
 * FILE@@OFFSET`, argv, never a shell) because a partition inside a file cannot be mounted
 * without a loop device; without mcopy in PATH the deploy fails saying so (the OS image cannot
 * call back without its seed). A block device is opened O_EXCL (refused while in use) and its
 * CIDATA partition is mounted with mount(2) "vfat" on a temporary directory; when the kernel
 * shows no partition after BLKRRPART (no MBR partition parser) or has no vfat, the MBR route
 * and mcopy are used on the device as for a file. */
#ifndef FP_AGENT_DEPLOY_H
#define FP_AGENT_DEPLOY_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "agent/bootclient.h"
#include "agent/inventory.h"

#define DEPLOY_META_MAX ((size_t)64 << 10)  /* bytes of config.metaData accepted */
#define DEPLOY_USER_MAX ((size_t)1 << 20)   /* bytes of config.userData accepted */
#define DEPLOY_ZERO_BYTES ((size_t)1 << 20) /* zeroed on a failed write */
#define DEPLOY_MAX_PARTS 128

/* The /boot/deploy document; strings borrowed from the JSON it was parsed from. */
struct deploy_doc {
	const char *image_name, *image_url, *image_sha256; /* sha256: 64 hex, lower-cased copy */
	char sha256[65];
	uint64_t size_bytes;
	const char *root_device;                      /* NULL: the agent picks */
	const char *hostname, *meta_data, *user_data; /* user_data may be NULL */
};

/* Checks doc against the contract: image.{name,url,sha256 (64 hex),sizeBytes (> 0)},
 * rootDevice string or null, config.{hostname, metaData (at most DEPLOY_META_MAX), userData
 * string (at most DEPLOY_USER_MAX) or null}. Returns 0 or FP_EINVAL with the field in err. */
int deploy_doc_parse(const json_t *doc, struct deploy_doc *d, char *err, size_t errlen);

/* The disk the contract's auto rule picks: the smallest non-removable disk of at least need
 * bytes (ties: the first in name order). NULL when none. */
const struct inventory_disk *deploy_pick_disk(const struct inventory_disk *disks, size_t n,
					      uint64_t need);

/* The volume label of a FAT boot sector (at least 512 bytes at bs): Microsoft FAT
 * specification (fatgen103) "Boot Sector and BPB": 0x55 0xAA at 510; BPB_FATSz16 (offset 22)
 * 0 means FAT32, whose BS_BootSig 0x29 is at 66 and BS_VolLab at 71, else FAT12/16 with
 * BS_BootSig at 38 and BS_VolLab at 43; 11 bytes, space padded (trailing spaces removed).
 * Returns 0, or FP_ENOTFOUND when it is not a FAT boot sector with an extended signature. */
int deploy_fat_label(const unsigned char *bs, size_t n, char *label, size_t labellen);

struct deploy_part {
	int index;          /* 1..4 */
	uint8_t type;       /* the MBR type byte */
	uint64_t start_lba; /* 512-byte sectors */
	uint64_t sectors;
};

/* The primary partitions of an MBR (512 bytes at mbr; 4 entries of 16 bytes at 446, 0x55 0xAA
 * at 510; type 0 = unused; a protective 0xEE entry (GPT) is returned as it is). Returns the
 * count (0..4), or FP_ENOTFOUND without the signature. */
int deploy_mbr_partitions(const unsigned char *mbr, size_t n, struct deploy_part *out);

/* The meta-data text to write: doc->meta_data, followed by the lines of the contract that it
 * lacks ("local-hostname: <hostname>", "fleetplane-node: N", "fleetplane-url: U",
 * "fleetplane-token: T", "instance-id: <node>" as the last resort), one key per line, ending
 * with '\n'. malloc'd. */
char *deploy_meta_data(const struct deploy_doc *doc, const char *node, const char *server,
		       const char *token);

struct deploy_opts {
	struct bootclient client;
	const char *node, *token;
	const char *root_device; /* --root-device: wins over the document's rootDevice */
	const char *sysfs_root;  /* "/" or a fake tree: the disks and partitions are found there */
	int dry_run;             /* GET and choose, print the plan; write and report nothing */
	FILE *out;               /* progress lines; NULL = stdout */
	long low_speed_s;        /* abort a download slower than 1 KiB/s for this long; 0 = 60 */
};

struct deploy_result {
	int ok;             /* written, verified and seeded */
	char sha256[65];    /* the sum seen ("" when nothing was read) */
	uint64_t bytes;     /* bytes of image read from the URL */
	char disk[256];     /* the disk chosen ("" before) */
	char message[1024]; /* what happened, for the report and the console */
	int reported;       /* 1 when POST /boot/deployed was answered 2xx */
	long report_status; /* its HTTP status (0: not sent) */
};

/* Runs the deploy for o->node (see the file comment); res says what happened. Returns 0 when
 * the image was written, verified, seeded and the report accepted (and for a dry run whose
 * plan holds); FP_EIO only when fleetplane could not be reached (the CLI's exit 3). Every other
 * failure is reported with ok=false when the server can be reached and returns (the CLI's exit
 * 1): FP_EINVAL (the document refused by the server, or not the contract's shape; the report
 * refused), FP_ETOOBIG (the image does not fit the disk, or no disk fits), FP_EAGAIN (the disk
 * cannot be opened, the download or the write failed, size or sha256 differ: the first MiB was
 * zeroed when anything had been written), FP_ENOTFOUND (no CIDATA partition, or the seed could
 * not be written). Blocks for the whole download. */
int deploy_run(const struct deploy_opts *o, struct deploy_result *res);

/* The JSON body of POST /boot/deployed for res. New reference. */
json_t *deploy_report_json(const char *node, const char *token, const struct deploy_result *res);

#endif
