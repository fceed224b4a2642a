/* layers: base core store driver engine sched */
/* test_slurm_conf.c - slurm.conf / gres.conf reading (sched/slurm_conf.h) on real configs from
 * tests/data/slurm/conf (SOURCES.md: a public cluster's config, the examples of Slurm's own
 * slurm.conf(5) and gres.conf(5), and a project-written cluster for Include, continuations,
 * mps/shard and faults), the syntax rules one by one in memory, the GRES strings, the generated
 * lines, and the round trip real config -> generated lines -> parsed again with equal CPUs and
 * GRES per node. Every expected value is written by hand from the files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"
#include "sched/slurm_conf.h"

#include "check.h"

static const char *srcdir(void)
{
	const char *s = getenv("FP_SRCDIR");
	return s && s[0] ? s : ".";
}

/* Reads tests/data/slurm/conf/<path> for a relative path; an absolute one as it is. */
static int data_reader(void *ctx, const char *path, struct buf *out, size_t max, char *err,
		       size_t errlen)
{
	(void)ctx;
	char *full = path[0] == '/' ? xstrdup(path)
				    : xasprintf("%s/tests/data/slurm/conf/%s", srcdir(), path);
	int rc = buf_read_file(out, full, max, err, errlen);
	free(full);
	if (rc < 0 && path[0] != '/') /* name the file as the config wrote it */
		snprintf(err, errlen, "cannot read %s", path);
	return rc;
}

static void parse_files(struct slurm_conf *c, const char *slurm, const char *gres)
{
	struct buf b;
	char err[256];
	buf_init(&b, 0);
	slurm_conf_init(c);
	ASSERT_OK(data_reader(NULL, slurm, &b, SLURM_CONF_MAX_TEXT, err, sizeof(err)));
	ASSERT_OK(slurm_conf_parse(c, slurm, b.data, b.len, data_reader, NULL, err, sizeof(err)));
	if (gres) {
		buf_reset(&b);
		ASSERT_OK(data_reader(NULL, gres, &b, SLURM_CONF_MAX_TEXT, err, sizeof(err)));
		ASSERT_OK(slurm_conf_parse_gres(c, gres, b.data, b.len, data_reader, NULL, err,
						sizeof(err)));
	}
	buf_release(&b);
}

static void parse_text(struct slurm_conf *c, const char *text)
{
	char err[256];
	slurm_conf_init(c);
	ASSERT_OK(
		slurm_conf_parse(c, "mem.conf", text, strlen(text), NULL, NULL, err, sizeof(err)));
}

/* "file:line: why" of diagnostic i */
static const char *diag_str(const struct slurm_conf *c, size_t i)
{
	static char s[600];
	assert_true(i < c->ndiags);
	snprintf(s, sizeof(s), "%s:%u: %s", c->diags[i].file, c->diags[i].line, c->diags[i].why);
	return s;
}

static const struct slurm_conf_node *node(const struct slurm_conf *c, const char *name)
{
	const struct slurm_conf_node *n = slurm_conf_node_get(c, name);
	if (!n)
		fail_msg("node %s not read", name);
	return n;
}

/* "gpu:a100:4,mps::400" */
static const char *gres_str(const struct slurm_conf_node *n)
{
	static char s[512];
	size_t w = 0;
	s[0] = '\0';
	for (size_t i = 0; i < n->ngres; i++)
		w += (size_t)snprintf(s + w, sizeof(s) - w, "%s%s:%s:%lld", i ? "," : "",
				      n->gres[i].name, n->gres[i].type, n->gres[i].count);
	return s;
}

static const char *parts_str(const struct slurm_conf_node *n)
{
	static char s[512];
	size_t w = 0;
	s[0] = '\0';
	for (size_t i = 0; i < n->nparts; i++)
		w += (size_t)snprintf(s + w, sizeof(s) - w, "%s%s", i ? "," : "", n->parts[i]);
	return s;
}

/* ---- real configs ---- */

static void test_tux_cluster(void **state)
{
	struct slurm_conf c;
	parse_files(&c, "tux-slurm.conf", "gres-man-tux.conf");
	/* tux[0-15] and login[1-2]; bad[1-2], tux16 and tux17 are reported, not read */
	ASSERT_EQ_INT(c.nnodes, 18);
	ASSERT_EQ_STR(c.cluster_name, "tux");
	const struct slurm_conf_node *n = node(&c, "tux0");
	/* NodeName=DEFAULT Sockets=2 CoresPerSocket=16 ThreadsPerCore=2 \ RealMemory=515000 */
	ASSERT_EQ_INT(n->cpus, 64);
	ASSERT_EQ_INT(n->sockets, 2);
	ASSERT_EQ_INT(n->cores_per_socket, 16);
	ASSERT_EQ_INT(n->threads_per_core, 2);
	ASSERT_EQ_INT(n->real_memory_mb, 515000);
	ASSERT_EQ_STR(n->state, "UNKNOWN");
	ASSERT_EQ_STR(gres_str(n), "gpu:a100:4");
	ASSERT_EQ_STR(parts_str(n), "gpu,all");
	ASSERT_EQ_STR(n->file, "tux-tux-nodes.conf");
	ASSERT_EQ_INT(n->line, 4);
	ASSERT_EQ_INT(n->ndevs, 1);
	ASSERT_EQ_STR(n->devs[0].file, "/dev/nvidia[0-3]");
	ASSERT_EQ_INT(n->devs[0].count, 4);
	n = node(&c, "tux3");
	ASSERT_EQ_STR(gres_str(n), "gpu:a100:3");
	ASSERT_EQ_INT(n->weight, 10);
	ASSERT_EQ_INT(n->cpus, 64);         /* the later "NodeName=tux3 CPUs=4" is refused */
	ASSERT_EQ_INT(n->devs[0].count, 3); /* File=/dev/nvidia[0,2-3] */
	n = node(&c, "tux11");
	ASSERT_EQ_STR(gres_str(n), "gpu:rtx_3090:4,mps::400");
	n = node(&c, "tux12");
	ASSERT_EQ_INT(n->cpus, 128);
	ASSERT_EQ_STR(gres_str(n), "gpu::4,shard::16");
	ASSERT_EQ_STR(n->features, "big"); /* after a continuation */
	ASSERT_EQ_STR(parts_str(n), "gpu,all,big");
	n = node(&c, "login2");
	ASSERT_EQ_INT(n->cpus, 8);
	ASSERT_EQ_INT(n->real_memory_mb, 64000);
	ASSERT_EQ_STR(n->state, "FUTURE");
	ASSERT_EQ_STR(parts_str(n), "all");
	ASSERT_EQ_INT(n->ngres, 0);
	assert_null(slurm_conf_node_get(&c, "bad1"));
	assert_null(slurm_conf_node_get(&c, "tux16"));
	assert_null(slurm_conf_node_get(&c, "tux17"));
	ASSERT_EQ_INT(c.nparts, 3);
	ASSERT_EQ_STR(c.parts[0].name, "gpu");
	ASSERT_EQ_INT(c.parts[0].is_default, 1);

	ASSERT_EQ_INT(c.ndiags, 7);
	ASSERT_EQ_STR(diag_str(&c, 0),
		      "tux-tux-nodes.conf:10: CPUs=lots is not a number from 0 to 65535");
	ASSERT_EQ_STR(c.diags[0].text, "NodeName=bad[1-2] CPUs=lots");
	ASSERT_EQ_STR(diag_str(&c, 1), "tux-tux-nodes.conf:11: GRES \"gpu:a100:four\": count "
				       "\"four\" is not a number");
	ASSERT_EQ_STR(diag_str(&c, 2), "tux-tux-nodes.conf:12: unknown NodeName key Colour");
	ASSERT_EQ_STR(diag_str(&c, 3),
		      "tux-tux-nodes.conf:13: 1 node(s) already defined by an earlier NodeName "
		      "line, first tux3; kept the first definition");
	ASSERT_EQ_STR(diag_str(&c, 4),
		      "tux-tux-nodes.conf:14: DownNodes is not mapped: fleetplane reads drained "
		      "and down nodes from the running slurmctld");
	ASSERT_EQ_STR(
		diag_str(&c, 5),
		"tux-slurm.conf:13: Include missing-nodes.conf: cannot read missing-nodes.conf");
	ASSERT_EQ_STR(diag_str(&c, 6), "tux-slurm.conf:12: 1 name(s) in Nodes= that no NodeName "
				       "line defines, first nosuch01");
	slurm_conf_release(&c);
}

/* gres.conf(5): "NodeName=tux3 AutoDetect=off Name=gpu File=/dev/nvidia[0-3]" gives tux3 four
 * GPUs where slurm.conf says three: reported on tux3's NodeName line. */
static void test_tux_autodetect(void **state)
{
	struct slurm_conf c;
	parse_files(&c, "tux-slurm.conf", "gres-man-autodetect.conf");
	ASSERT_EQ_STR(c.autodetect, "nvml");
	ASSERT_EQ_STR(node(&c, "tux3")->autodetect, "off");
	ASSERT_EQ_STR(node(&c, "tux2")->autodetect, "");
	ASSERT_EQ_INT(node(&c, "tux2")->ndevs, 0);
	ASSERT_EQ_INT(c.ndiags, 8);
	ASSERT_EQ_STR(diag_str(&c, 7),
		      "tux-tux-nodes.conf:5: node tux3: gres.conf gives 4 gpu, its Gres= 3");
	slurm_conf_release(&c);
}

/* github.com/giovtorres/docker-centos7-slurm files/slurm/slurm.conf: no CPUs (112 from
 * Sockets=2 CoresPerSocket=56), two typed GPUs on one node, Gres= twice on one line (Slurm
 * uses the last), and a gres.conf without NodeName, for every node. */
static void test_giovtorres(void **state)
{
	struct slurm_conf c;
	parse_files(&c, "giovtorres-slurm.conf", "giovtorres-gres.conf");
	ASSERT_EQ_INT(c.nnodes, 4);
	ASSERT_EQ_INT(node(&c, "c1")->cpus, 112);
	ASSERT_EQ_STR(node(&c, "c1")->addr, "127.0.0.1");
	ASSERT_EQ_INT(node(&c, "c1")->ngres, 0);
	ASSERT_EQ_STR(gres_str(node(&c, "c2")), "gpu:titanxp:3,gpu:a100:3");
	ASSERT_EQ_STR(gres_str(node(&c, "c3")), "gpu:titanxp:3");
	ASSERT_EQ_STR(gres_str(node(&c, "c4")), "gpu:a100:3");
	ASSERT_EQ_STR(parts_str(node(&c, "c1")), "normal");
	ASSERT_EQ_STR(parts_str(node(&c, "c4")), "debug");
	ASSERT_EQ_INT(node(&c, "c4")->ndevs, 2);
	ASSERT_EQ_STR(node(&c, "c4")->devs[1].type, "a100");
	ASSERT_EQ_STR(node(&c, "c4")->devs[1].cores, "0");
	ASSERT_EQ_INT(c.ndiags, 5);
	ASSERT_EQ_STR(
		diag_str(&c, 0),
		"giovtorres-slurm.conf:59: Gres given twice on one line: Slurm uses the last");
	ASSERT_EQ_STR(
		diag_str(&c, 1),
		"giovtorres-slurm.conf:60: Gres given twice on one line: Slurm uses the last");
	ASSERT_EQ_STR(diag_str(&c, 2),
		      "giovtorres-slurm.conf:57: node c1: gres.conf gives 6 gpu, its Gres= 0");
	ASSERT_EQ_STR(diag_str(&c, 3),
		      "giovtorres-slurm.conf:59: node c3: gres.conf gives 6 gpu, its Gres= 3");
	ASSERT_EQ_STR(diag_str(&c, 4),
		      "giovtorres-slurm.conf:60: node c4: gres.conf gives 6 gpu, its Gres= 3");
	slurm_conf_release(&c);
}

/* slurm.conf(5) EXAMPLE: two NodeName=DEFAULT lines merged, NodeAddr a parallel hostlist,
 * PartitionName=DEFAULT, DownNodes reported. */
static void test_man_example(void **state)
{
	struct slurm_conf c;
	parse_files(&c, "slurm-man-example.conf", NULL);
	ASSERT_EQ_INT(c.nnodes, 26);
	const struct slurm_conf_node *n = node(&c, "dev25");
	ASSERT_EQ_STR(n->addr, "edev25");
	ASSERT_EQ_INT(n->cpus, 2);
	ASSERT_EQ_INT(n->sockets, 2); /* CPUs=2 / (1 core x 1 thread) */
	ASSERT_EQ_INT(n->real_memory_mb, 2000);
	ASSERT_EQ_INT(n->weight, 16);
	ASSERT_EQ_STR(n->state, "UNKNOWN");
	ASSERT_EQ_STR(parts_str(n), "debug");
	ASSERT_EQ_STR(parts_str(node(&c, "dev9")), "batch,long");
	ASSERT_EQ_STR(parts_str(node(&c, "dev8")), "debug");
	ASSERT_EQ_INT(c.ndiags, 1);
	ASSERT_EQ_STR(diag_str(&c, 0),
		      "slurm-man-example.conf:38: DownNodes is not mapped: fleetplane reads "
		      "drained and down nodes from the running slurmctld");
	slurm_conf_release(&c);
}

/* gres.conf(5)'s first example on a two-GPU node: typed GPUs, mps Count, COREs= in any case. */
static void test_gres_mps_example(void **state)
{
	struct slurm_conf c;
	parse_text(&c, "NodeName=n1 CPUs=4 Gres=gpu:gtx560:1,gpu:tesla:1,mps:200\n");
	char err[256];
	struct buf b;
	buf_init(&b, 0);
	ASSERT_OK(
		data_reader(NULL, "gres-man-mps.conf", &b, SLURM_CONF_MAX_TEXT, err, sizeof(err)));
	ASSERT_OK(slurm_conf_parse_gres(&c, "gres-man-mps.conf", b.data, b.len, NULL, NULL, err,
					sizeof(err)));
	buf_release(&b);
	const struct slurm_conf_node *n = node(&c, "n1");
	ASSERT_EQ_INT(c.ndiags, 0);
	ASSERT_EQ_STR(c.autodetect, "nvml");
	ASSERT_EQ_INT(n->ndevs, 4);
	ASSERT_EQ_STR(n->devs[1].type, "tesla");
	ASSERT_EQ_STR(n->devs[1].file, "/dev/nvidia1");
	ASSERT_EQ_STR(n->devs[1].cores, "2,3");
	ASSERT_EQ_STR(n->devs[3].name, "mps");
	ASSERT_EQ_INT(n->devs[3].count, 100);
	slurm_conf_release(&c);
}

/* ---- syntax ---- */

static void test_syntax(void **state)
{
	struct slurm_conf c;
	parse_text(&c, "# comment\n"
		       "nodename = n[01-02]  cpus=16 \\\n"
		       "   GRES=gpu:h100:8 features=\"a b\" # trailing\n"
		       "NodeName=n03 Feature=x\\#y CPUs=2\r\n"
		       "NodeName=n04 Feature=\"open\n"
		       "NodeName=n05 CPUs\n"
		       "NodeName=n06 CPUs=\n"
		       "NodeName=n07 CPUs=2 \x01\n"
		       "NodeName=n[08 CPUs=2\n"
		       "NodeName=n09 NodeAddr=a[1-2]\n"
		       "NodeName=DEFAULT NodeAddr=x\n"
		       "NodeName=n10 Sockets=2 SocketsPerBoard=2\n"
		       "NodeName=n11 Boards=2 SocketsPerBoard=2 CoresPerSocket=4\n"
		       "Include nothing.conf\n"
		       "PartitionName=p Nodes=ALL\n");
	ASSERT_EQ_INT(c.nnodes, 4);
	const struct slurm_conf_node *n = node(&c, "n02");
	ASSERT_EQ_INT(n->cpus, 16);
	ASSERT_EQ_STR(gres_str(n), "gpu:h100:8");
	ASSERT_EQ_STR(n->features, "a b");
	ASSERT_EQ_INT(n->line, 2);
	ASSERT_EQ_STR(node(&c, "n03")->features, "x#y");
	ASSERT_EQ_INT(node(&c, "n03")->line, 4);
	ASSERT_EQ_INT(node(&c, "n11")->sockets, 4);
	ASSERT_EQ_INT(node(&c, "n11")->cpus, 16);
	ASSERT_EQ_STR(parts_str(node(&c, "n11")), "p");
	ASSERT_EQ_INT(c.ndiags, 9);
	ASSERT_EQ_STR(diag_str(&c, 0), "mem.conf:5: a quote without its end at column 22");
	ASSERT_EQ_STR(diag_str(&c, 1), "mem.conf:6: not Key=Value at column 14");
	ASSERT_EQ_STR(diag_str(&c, 2), "mem.conf:7: CPUs= without a value");
	ASSERT_EQ_STR(diag_str(&c, 3), "mem.conf:8: a control byte");
	ASSERT_EQ_STR(diag_str(&c, 4),
		      "mem.conf:9: NodeName=n[08 does not expand: hostlist: '[' at "
		      "offset 1 has no ']'");
	ASSERT_EQ_STR(diag_str(&c, 5),
		      "mem.conf:10: NodeAddr=a[1-2] does not give one address per node (1)");
	ASSERT_EQ_STR(diag_str(&c, 6),
		      "mem.conf:11: NodeAddr is not allowed with NodeName=DEFAULT");
	ASSERT_EQ_STR(diag_str(&c, 7), "mem.conf:12: both Sockets and SocketsPerBoard: give one "
				       "(slurm.conf(5))");
	ASSERT_EQ_STR(diag_str(&c, 8),
		      "mem.conf:14: Include nothing.conf not read (no file reader)");
	slurm_conf_release(&c);
}

/* An Include of itself stops at SLURM_CONF_MAX_DEPTH with one diagnostic. */
static int loop_reader(void *ctx, const char *path, struct buf *out, size_t max, char *err,
		       size_t errlen)
{
	(*(int *)ctx)++;
	return buf_puts(out, "NodeName=x CPUs=1\nInclude self.conf\n");
}

static void test_include_depth(void **state)
{
	struct slurm_conf c;
	int reads = 0;
	char err[256];
	slurm_conf_init(&c);
	const char *t = "Include self.conf\n";
	ASSERT_OK(slurm_conf_parse(&c, "/etc/slurm/slurm.conf", t, strlen(t), loop_reader, &reads,
				   err, sizeof(err)));
	ASSERT_EQ_INT(reads, SLURM_CONF_MAX_DEPTH);
	ASSERT_EQ_INT(c.nnodes, 1);
	/* the first node's line in each file after the first is a duplicate */
	ASSERT_EQ_INT(c.ndiags, SLURM_CONF_MAX_DEPTH);
	ASSERT_EQ_STR(diag_str(&c, SLURM_CONF_MAX_DEPTH - 1),
		      "/etc/slurm/self.conf:2: Include /etc/slurm/self.conf nested more than 8 "
		      "deep");
	slurm_conf_release(&c);
}

static void test_bounds(void **state)
{
	struct slurm_conf c;
	char err[256];
	slurm_conf_init(&c);
	ASSERT_EQ_ERR(slurm_conf_parse(&c, "big.conf", "", SLURM_CONF_MAX_TEXT + 1, NULL, NULL, err,
				       sizeof(err)),
		      FP_ETOOBIG);
	slurm_conf_release(&c);
	slurm_conf_init(&c);
	const char *t = "NodeName=a[1-40000]\nNodeName=b[1-40000]\n";
	ASSERT_EQ_ERR(slurm_conf_parse(&c, "many.conf", t, strlen(t), NULL, NULL, err, sizeof(err)),
		      FP_ETOOBIG);
	ASSERT_EQ_STR(err, "many.conf:2: more than 65536 nodes");
	ASSERT_EQ_INT(c.nnodes, 40000);
	slurm_conf_release(&c);
	/* one logical line over the bound */
	struct buf b;
	buf_init(&b, 0);
	buf_puts(&b, "NodeName=n1 Feature=");
	for (int i = 0; i < 70000; i++)
		buf_puts(&b, i % 100 == 99 ? "\\\n" : "x");
	buf_puts(&b, "\nNodeName=n2\n");
	slurm_conf_init(&c);
	ASSERT_OK(slurm_conf_parse(&c, "long.conf", b.data, b.len, NULL, NULL, err, sizeof(err)));
	ASSERT_EQ_INT(c.nnodes, 1);
	ASSERT_EQ_STR(diag_str(&c, 0), "long.conf:1: a line longer than 65536 bytes");
	ASSERT_EQ_INT(node(&c, "n2")->line, 702); /* 700 continuations */
	slurm_conf_release(&c);
	buf_release(&b);
}

/* ---- GRES strings ---- */

static const char *gres_of(const char *s)
{
	static char out[512];
	struct slurm_gres g[SLURM_CONF_MAX_GRES];
	size_t n = 99;
	char err[256];
	int rc = slurm_gres_parse(s, strlen(s), g, SLURM_CONF_MAX_GRES, &n, err, sizeof(err));
	if (rc < 0) {
		ASSERT_EQ_INT(n, 0);
		snprintf(out, sizeof(out), "%s: %s", fp_err_name(rc), err);
		return out;
	}
	size_t w = 0;
	out[0] = '\0';
	for (size_t i = 0; i < n; i++)
		w += (size_t)snprintf(out + w, sizeof(out) - w, "%s%s:%s:%lld", i ? "," : "",
				      g[i].name, g[i].type, g[i].count);
	return out;
}

static void test_gres_strings(void **state)
{
	ASSERT_EQ_STR(gres_of("gpu:a100:8"), "gpu:a100:8");
	ASSERT_EQ_STR(gres_of("gpu:8"), "gpu::8");
	ASSERT_EQ_STR(gres_of("gpu"), "gpu::1");
	ASSERT_EQ_STR(gres_of("gpu:tesla"), "gpu:tesla:1");
	ASSERT_EQ_STR(gres_of("gpu:rtx_3090:8,mps:800"), "gpu:rtx_3090:8,mps::800");
	ASSERT_EQ_STR(gres_of("gpu:4,shard:16"), "gpu::4,shard::16");
	ASSERT_EQ_STR(gres_of("bandwidth:lustre:4G"), "bandwidth:lustre:4294967296");
	ASSERT_EQ_STR(gres_of("gpu:(null):4(IDX:0-3)"), "gpu::4");
	ASSERT_EQ_STR(gres_of("gpu:a100:2(S:0-1)"), "gpu:a100:2");
	ASSERT_EQ_STR(gres_of("gpu:a100:2(IDX:0,2),mps:50"), "gpu:a100:2,mps::50");
	ASSERT_EQ_STR(gres_of("gpu:nvidia_a100-sxm4-80gb:4"), "gpu:nvidia_a100-sxm4-80gb:4");
	ASSERT_EQ_STR(gres_of(""), "");
	ASSERT_EQ_STR(gres_of("(null)"), "");
	ASSERT_EQ_STR(gres_of("gpu:a100:four"),
		      "FP_EPARSE: GRES \"gpu:a100:four\": count \"four\" is not a number");
	ASSERT_EQ_STR(gres_of("gpu:a:1:2"), "FP_EPARSE: GRES \"gpu:a:1:2\": more than "
					    "name:type:count");
	ASSERT_EQ_STR(gres_of("gpu:8,,mps:1"), "FP_EPARSE: GRES \"gpu:8,,mps:1\": empty item");
	ASSERT_EQ_STR(gres_of("gp u:8"), "FP_EPARSE: GRES \"gp u:8\": bad name \"gp u\"");
	ASSERT_EQ_STR(gres_of("gpu:a:1,gpu:a:2"),
		      "FP_EPARSE: GRES \"gpu:a:1,gpu:a:2\": gpu:a given twice");
	ASSERT_EQ_STR(gres_of("gpu:a:9999999999999999P"),
		      "FP_EPARSE: GRES \"gpu:a:9999999999999999P\": count \"9999999999999999P\" "
		      "is not a number");
	ASSERT_EQ_STR(gres_of("gpu:a:8P"), "gpu:a:9007199254740992"); /* 2^53 */
	ASSERT_EQ_STR(gres_of("gpu:a:9P"),
		      "FP_EPARSE: GRES \"gpu:a:9P\": count \"9P\" is not a number");
	ASSERT_EQ_STR(gres_of("a:1,b:1,c:1,d:1,e:1,f:1,g:1,h:1,i:1"),
		      "FP_ETOOBIG: GRES \"a:1,b:1,c:1,d:1,e:1,f:1,g:1,h:1,i:1\": more than 8 "
		      "items");
}

/* ---- generating ---- */

static void test_render(void **state)
{
	struct slurm_gres a100[] = {{"gpu", "a100", 8}};
	struct slurm_gres mixed[] = {{"gpu", "rtx_3090", 8}, {"mps", "", 800}};
	const char *gpu[] = {"gpu"}, *both[] = {"gpu", "debug"};
	struct slurm_conf_spec specs[] = {
		{"gpu010", 64, 2, 16, 2, 515000, a100, 1, gpu, 1},
		{"gpu002", 64, 2, 16, 2, 515000, a100, 1, gpu, 1},
		{"gpu001", 64, 2, 16, 2, 515000, a100, 1, both, 2},
		{"cpu1", 8, 0, 0, 0, 0, NULL, 0, NULL, 0},
		{"gpu003", 64, 2, 16, 2, 515000, mixed, 2, gpu, 1},
	};
	const char *want = "NodeName=cpu1 CPUs=8\n"
			   "NodeName=gpu[001-002,010] CPUs=64 Sockets=2 CoresPerSocket=16 "
			   "ThreadsPerCore=2 RealMemory=515000 Gres=gpu:a100:8\n"
			   "NodeName=gpu003 CPUs=64 Sockets=2 CoresPerSocket=16 ThreadsPerCore=2 "
			   "RealMemory=515000 Gres=gpu:rtx_3090:8,mps:800\n"
			   "PartitionName=debug Nodes=gpu001\n"
			   "PartitionName=gpu Nodes=gpu[001-003,010]\n";
	struct buf out;
	char err[256];
	buf_init(&out, 0);
	ASSERT_OK(slurm_conf_render_nodes(specs, 5, &out, err, sizeof(err)));
	ASSERT_EQ_STR(out.data, want);
	/* any order, the same bytes */
	struct slurm_conf_spec rev[5];
	for (int i = 0; i < 5; i++)
		rev[i] = specs[4 - i];
	buf_reset(&out);
	ASSERT_OK(slurm_conf_render_nodes(rev, 5, &out, err, sizeof(err)));
	ASSERT_EQ_STR(out.data, want);
	buf_reset(&out);
	ASSERT_OK(slurm_conf_render_gres(&specs[4], &out, err, sizeof(err)));
	ASSERT_EQ_STR(out.data, "NodeName=gpu003 Name=gpu Type=rtx_3090 File=/dev/nvidia[0-7]\n"
				"NodeName=gpu003 Name=mps Count=800\n");
	struct slurm_gres two[] = {{"gpu", "a", 1}, {"gpu", "", 2}};
	struct slurm_conf_spec s2 = {"n1", 0, 0, 0, 0, 0, two, 2, NULL, 0};
	buf_reset(&out);
	ASSERT_OK(slurm_conf_render_gres(&s2, &out, err, sizeof(err)));
	ASSERT_EQ_STR(out.data, "NodeName=n1 Name=gpu Type=a File=/dev/nvidia0\n"
				"NodeName=n1 Name=gpu File=/dev/nvidia[1-2]\n");
	/* refused, out unchanged */
	specs[3].name = "gpu001";
	buf_reset(&out);
	buf_puts(&out, "kept");
	ASSERT_EQ_ERR(slurm_conf_render_nodes(specs, 5, &out, err, sizeof(err)), FP_EINVAL);
	ASSERT_EQ_STR(err, "node gpu001 given twice");
	specs[3].name = "bad name";
	ASSERT_EQ_ERR(slurm_conf_render_nodes(specs, 5, &out, err, sizeof(err)), FP_EINVAL);
	const char *bad_part[] = {"a b"};
	specs[3].name = "cpu1";
	specs[3].parts = bad_part;
	specs[3].nparts = 1;
	ASSERT_EQ_ERR(slurm_conf_render_nodes(specs, 5, &out, err, sizeof(err)), FP_EINVAL);
	ASSERT_EQ_STR(err, "node cpu1: bad partition name");
	ASSERT_EQ_STR(out.data, "kept");
	buf_release(&out);
}

/* Parse a real config, generate its lines from the parsed nodes, parse those again: the same
 * nodes with the same CPUs, topology, memory and GRES, partitions kept, and no diagnostic. */
static void round_trip(const char *slurm, const char *gres, size_t want_nodes)
{
	struct slurm_conf a, b;
	parse_files(&a, slurm, gres);
	ASSERT_EQ_INT(a.nnodes, want_nodes);
	struct slurm_conf_spec *specs = xcalloc(a.nnodes, sizeof(*specs));
	const char ***parts = xcalloc(a.nnodes, sizeof(*parts));
	struct buf conf, gconf;
	char err[256];
	buf_init(&conf, 0);
	buf_init(&gconf, 0);
	for (size_t i = 0; i < a.nnodes; i++) {
		const struct slurm_conf_node *n = &a.nodes[i];
		parts[i] = xcalloc(SLURM_CONF_MAX_PARTS, sizeof(char *));
		for (size_t p = 0; p < n->nparts; p++)
			parts[i][p] = n->parts[p];
		specs[i] = (struct slurm_conf_spec){
			.name = n->name,
			.cpus = n->cpus,
			.sockets = n->sockets,
			.cores_per_socket = n->cores_per_socket,
			.threads_per_core = n->threads_per_core,
			.real_memory_mb = n->real_memory_mb > 0 ? n->real_memory_mb : 0,
			.gres = n->gres,
			.ngres = n->ngres,
			.parts = parts[i],
			.nparts = n->nparts,
		};
		ASSERT_OK(slurm_conf_render_gres(&specs[i], &gconf, err, sizeof(err)));
	}
	ASSERT_OK(slurm_conf_render_nodes(specs, a.nnodes, &conf, err, sizeof(err)));
	slurm_conf_init(&b);
	ASSERT_OK(slurm_conf_parse(&b, "nodes.conf", conf.data, conf.len, NULL, NULL, err,
				   sizeof(err)));
	ASSERT_OK(slurm_conf_parse_gres(&b, "gres.conf", gconf.data ? gconf.data : "", gconf.len,
					NULL, NULL, err, sizeof(err)));
	if (b.ndiags)
		fail_msg("%s: generated lines give %s\n%s", slurm, diag_str(&b, 0), conf.data);
	ASSERT_EQ_INT(b.nnodes, a.nnodes);
	for (size_t i = 0; i < a.nnodes; i++) {
		const struct slurm_conf_node *x = &a.nodes[i], *y = node(&b, x->name);
		ASSERT_EQ_INT(y->cpus, x->cpus);
		ASSERT_EQ_INT(y->sockets, x->sockets);
		ASSERT_EQ_INT(y->cores_per_socket, x->cores_per_socket);
		ASSERT_EQ_INT(y->threads_per_core, x->threads_per_core);
		ASSERT_EQ_INT(y->real_memory_mb, x->real_memory_mb);
		char gx[512];
		snprintf(gx, sizeof(gx), "%s", gres_str(x));
		ASSERT_EQ_STR(gres_str(y), gx);
		char px[512];
		snprintf(px, sizeof(px), "%s", parts_str(x));
		/* partitions come back sorted by name */
		if (x->nparts <= 1)
			ASSERT_EQ_STR(parts_str(y), px);
		ASSERT_EQ_INT(y->nparts, x->nparts);
	}
	for (size_t i = 0; i < a.nnodes; i++)
		free(parts[i]);
	free(parts);
	free(specs);
	buf_release(&conf);
	buf_release(&gconf);
	slurm_conf_release(&a);
	slurm_conf_release(&b);
}

static void test_round_trip(void **state)
{
	round_trip("tux-slurm.conf", "gres-man-tux.conf", 18);
	round_trip("giovtorres-slurm.conf", "giovtorres-gres.conf", 4);
	round_trip("slurm-man-example.conf", NULL, 26);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tux_cluster),      cmocka_unit_test(test_tux_autodetect),
		cmocka_unit_test(test_giovtorres),       cmocka_unit_test(test_man_example),
		cmocka_unit_test(test_gres_mps_example), cmocka_unit_test(test_syntax),
		cmocka_unit_test(test_include_depth),    cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_gres_strings),     cmocka_unit_test(test_render),
		cmocka_unit_test(test_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
