/* cmd_image.c - `fleetplane image add|list|rm`: the image store of network-boot provisioning
 * (boot/image.h, docs/provisioning.md "Images"), on the data dir directly: an image is a file,
 * so adding one needs no running server, and a running boot service sees it at its next
 * request (rename is atomic). Exit codes as cmds.h: 0 ok, 1 failed, 2 usage. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/err.h"
#include "base/timefmt.h"
#include "boot/image.h"
#include "cmd/client.h"
#include "cmd/cmds.h"
#include "cmd/table.h"

#include "base/banned.h"

static const char image_usage[] =
	"usage: fleetplane image add   --data-dir DIR [--replace] NAME FILE\n"
	"       fleetplane image list  --data-dir DIR [-o json]\n"
	"       fleetplane image rm    --data-dir DIR NAME\n"
	"\n"
	"The images the boot service serves (GET /boot/files/NAME): the ramdisk kernel and\n"
	"initrd (serve --boot-kernel / --boot-initrd, default ramdisk-vmlinuz, ramdisk-initrd)\n"
	"and the disk images nodes name in spec.provision.image. `add` copies FILE into\n"
	"DIR/images/NAME, recording its size and sha256; the deploy ramdisk checks that sum\n"
	"while it writes. NAME: 1-63 of a-z 0-9 . _ -, starting with a letter or digit.\n";

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int cmd_image(int argc, char **argv)
{
	const char *cmd = "image";
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		fputs(image_usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	const char *verb = argv[1];
	const char *data_dir = NULL, *out = NULL;
	int replace = 0;
	static const struct option longopts[] = {{"data-dir", required_argument, NULL, 'd'},
						 {"replace", no_argument, NULL, 'r'},
						 {"output", required_argument, NULL, 'o'},
						 {"help", no_argument, NULL, 'h'},
						 {NULL, 0, NULL, 0}};
	optind = 1;
	int c;
	while ((c = getopt_long(argc - 1, argv + 1, "o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': data_dir = optarg; break;
		case 'r': replace = 1; break;
		case 'o': out = optarg; break;
		case 'h': fputs(image_usage, stdout); return 0;
		default: return client_usage_error(cmd, "see fleetplane image --help");
		}
	}
	char **rest = argv + 1 + optind;
	int nrest = argc - 1 - optind;
	if (!data_dir)
		return client_usage_error(cmd, "flag '--data-dir' is required");
	if (out && strcmp(out, "json") != 0)
		return client_usage_error(cmd, "flag '-o': only json is supported");
	char dir[4096];
	if (snprintf(dir, sizeof(dir), "%s/images", data_dir) >= (int)sizeof(dir))
		return client_usage_error(cmd, "flag '--data-dir': path too long");
	char err[512];
	if (strcmp(verb, "add") == 0) {
		if (nrest != 2)
			return client_usage_error(cmd, "add takes NAME FILE");
		struct image_info info;
		mkdir(data_dir, 0700); /* as serve makes it; an error shows at the next step */
		int rc = image_add(dir, rest[0], rest[1], replace, wall_ms(), &info, err,
				   sizeof(err));
		if (rc < 0) {
			fprintf(stderr, "error: %s\n", err);
			return rc == FP_EINVAL ? 2 : 1;
		}
		printf("image %s added: %lld bytes, sha256 %s\n", info.name, (long long)info.size,
		       info.sha256);
		return 0;
	}
	if (strcmp(verb, "list") == 0 || strcmp(verb, "ls") == 0) {
		if (nrest != 0)
			return client_usage_error(cmd, "list takes no arguments");
		struct image_info *v = NULL;
		size_t n = 0;
		if (image_list(dir, &v, &n, err, sizeof(err)) < 0) {
			fprintf(stderr, "error: %s\n", err);
			return 1;
		}
		if (out) {
			printf("{\"items\": [");
			for (size_t i = 0; i < n; i++) {
				char ts[FP_TIME_LEN];
				fp_time_format(v[i].added_ms, ts);
				printf("%s{\"name\": \"%s\", \"sizeBytes\": %lld, \"sha256\": \"%s\", "
				       "\"addedAt\": \"%s\"}",
				       i ? ", " : "", v[i].name, (long long)v[i].size, v[i].sha256,
				       ts);
			}
			printf("]}\n");
		} else {
			struct table t;
			table_init(&t, 0);
			table_col(&t, "NAME", 63);
			table_col(&t, "SIZE", 20);
			table_col(&t, "SHA256", 64);
			table_col(&t, "ADDED", 32);
			for (size_t i = 0; i < n; i++) {
				char ts[FP_TIME_LEN];
				fp_time_format(v[i].added_ms, ts);
				table_cell(&t, v[i].name);
				table_cellf(&t, "%lld", (long long)v[i].size);
				table_cell(&t, v[i].sha256);
				table_cell(&t, ts);
			}
			table_print(&t, stdout);
			table_release(&t);
		}
		free(v);
		return 0;
	}
	if (strcmp(verb, "rm") == 0 || strcmp(verb, "remove") == 0) {
		if (nrest != 1)
			return client_usage_error(cmd, "rm takes NAME");
		int rc = image_remove(dir, rest[0], err, sizeof(err));
		if (rc < 0) {
			fprintf(stderr, "error: %s\n", err);
			return rc == FP_EINVAL ? 2 : 1;
		}
		printf("image %s removed\n", rest[0]);
		return 0;
	}
	return client_usage_error(cmd, "unknown verb \"%s\" (add, list, rm)", verb);
}
