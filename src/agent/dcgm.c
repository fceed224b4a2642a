/* agent/dcgm.c - parsers of DCGM's `dcgmi health -c` and `dcgmi diag -r N` output into findings
 * "dcgm:<subsystem>" (agent/dcgm.h has the contract).
 *
 * Both are boxed tables drawn by dcgmi's DcgmiOutput classes (NVIDIA DCGM dcgmi/DcgmiOutput.cpp):
 * rows "| left | right |", borders "+---+---+" / "+===+===+", long values wrapped onto
 * continuation rows whose left cell is empty. `dcgmi health -c` is a tree (dcgmi/Health.cpp):
 * "Overall Health" then per entity group ("GPU") rows "-> <id>", "-> Errors", "-> <System>
 * system" with Healthy / Warning / Failure. `dcgmi health -c -j` prints the same tree as JSON
 * ({"body": {"Overall Health": {"value"}, "GPU": {"children": {...}}}}). `dcgmi diag` rows are
 * "<test> | Pass|Skip|Warn|Fail[ - All| - GPU: n| - GPUs: n, m]" under section rows
 * ("|-----  Hardware  ---") with "Info"/"Warning" detail rows (dcgmi/Diag.cpp). Unicode
 * box-drawing verticals are read as '|'. Pure; bounded (DCGM_MAX_INPUT). */
#include "agent/dcgm.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/jsonx.h"

#include "agent/text.h"
#include "base/banned.h"

#define ROW_LEN 512

/* Copies one line, mapping UTF-8 box-drawing characters (U+2500-U+257F: E2 94 xx / E2 95 xx)
 * to ASCII: verticals to '|', everything else to '-'. */
static void ascii_line(const char *in, size_t n, char *out, size_t outlen)
{
	size_t o = 0;
	for (size_t i = 0; i < n && o + 1 < outlen; i++) {
		unsigned char c = (unsigned char)in[i];
		if (c == 0xe2 && i + 2 < n &&
		    ((unsigned char)in[i + 1] == 0x94 || (unsigned char)in[i + 1] == 0x95)) {
			unsigned char b = (unsigned char)in[i + 1], d = (unsigned char)in[i + 2];
			int vert = (b == 0x94 && (d == 0x82 || d == 0x83)) ||
				   (b == 0x95 && d == 0x91);
			out[o++] = vert ? '|' : '-';
			i += 2;
		} else {
			out[o++] = c == '\0' ? ' ' : (char)c;
		}
	}
	out[o] = '\0';
}

enum row_kind {
	ROW_OTHER,
	ROW_BORDER,
	ROW_SECTION,
	ROW_CELLS
};

/* Classifies a table line; for ROW_CELLS fills left/right (trimmed), for ROW_SECTION the
 * section name. */
static enum row_kind split_row(char *line, char *left, char *right, size_t cell)
{
	char *p, *q;
	int letters = 0;
	agent_text_trim(line);
	left[0] = right[0] = '\0';
	if (line[0] != '+' && line[0] != '|')
		return ROW_OTHER;
	for (p = line; *p; p++)
		letters |= isalpha((unsigned char)*p) != 0;
	if (line[0] == '+' && !letters)
		return ROW_BORDER;
	p = line + 1;
	while (*p == ' ')
		p++;
	if (strncmp(p, "---", 3) == 0 || line[0] == '+') {
		/* "|-----  Hardware  ----+---|": the name is the letters run */
		while (*p && !isalpha((unsigned char)*p))
			p++;
		q = p;
		while (*q && (isalnum((unsigned char)*q) || *q == ' ') &&
		       !(q[0] == ' ' && q[1] == ' '))
			q++;
		snprintf(left, cell, "%.*s", (int)(q - p), p);
		agent_text_trim(left);
		return ROW_SECTION;
	}
	q = strchr(line + 1, '|');
	if (!q) { /* a row cut before its separator */
		snprintf(left, cell, "%s", line + 1);
		agent_text_trim(left);
		return ROW_CELLS;
	}
	snprintf(left, cell, "%.*s", (int)(q - line - 1), line + 1);
	p = q + 1;
	q = strrchr(p, '|');
	snprintf(right, cell, "%.*s", q ? (int)(q - p) : (int)strlen(p), p);
	agent_text_trim(left);
	agent_text_trim(right);
	return ROW_CELLS;
}

/* Copies src into dst, cut to dstlen - 1 bytes. */
static void set_str(char *dst, size_t dstlen, const char *src)
{
	size_t l = strnlen(src, dstlen - 1);
	memcpy(dst, src, l);
	dst[l] = '\0';
}

static struct agent_finding *new_finding(struct agent_finding *out, size_t max, size_t *n,
					 const char *subsystem, int gpu)
{
	struct agent_finding *f;
	if (*n >= max)
		return NULL;
	f = &out[(*n)++];
	memset(f, 0, sizeof(*f));
	snprintf(f->source, sizeof(f->source), "%s", "dcgm");
	snprintf(f->code, sizeof(f->code), "dcgm:%s", subsystem);
	f->gpu_index = gpu;
	return f;
}

static void append_msg(struct agent_finding *f, const char *text)
{
	size_t l = strlen(f->message);
	if (!text[0] || l + 2 >= sizeof(f->message))
		return;
	snprintf(f->message + l, sizeof(f->message) - l, "%s%s", l ? " " : "", text);
}

/* "Memory system" -> "memory", "NVLINK system" -> "nvlink", "Driver" -> "driver". */
static void subsystem_of(const char *sys, char *out, size_t outlen)
{
	size_t o = 0, l = strlen(sys);
	if (l > 7 && strcasecmp(sys + l - 7, " system") == 0)
		l -= 7;
	for (size_t i = 0; i < l && o + 1 < outlen; i++) {
		char c = (char)tolower((unsigned char)sys[i]);
		out[o++] = isalnum((unsigned char)c) ? c : '_';
	}
	out[o] = '\0';
	if (o == 0)
		snprintf(out, outlen, "health");
}

/* Healthy 0, Warning 1, Failure 2, anything else -1 (dcgmi Health::HelperHealthToString). */
static int health_word(const char *v)
{
	if (strcmp(v, "Healthy") == 0)
		return 0;
	if (strcmp(v, "Warning") == 0)
		return 1;
	if (strcmp(v, "Failure") == 0 || strcmp(v, "Fail") == 0)
		return 2;
	return -1;
}

struct health_walk {
	struct agent_finding *out;
	size_t max, n;
	int unknown;
};

static void health_incident(struct health_walk *w, const char *group, long id, const char *sys,
			    const char *value, struct agent_finding **last)
{
	char sub[32];
	int h = health_word(value);
	struct agent_finding *f;
	*last = NULL;
	if (h < 0) {
		w->unknown = 1;
		return;
	}
	if (h == 0)
		return;
	subsystem_of(sys, sub, sizeof(sub));
	f = new_finding(w->out, w->max, &w->n, sub,
			strcmp(group, "GPU") == 0 && id >= 0 && id < 100000 ? (int)id : -1);
	if (!f)
		return;
	snprintf(f->key, sizeof(f->key), "%s/%ld/%s/%s", group, id, sub, value);
	snprintf(f->message, sizeof(f->message), "dcgmi health: %s %ld %s: %s", group, id, sys,
		 value);
	append_msg(f, "-");
	*last = f;
}

static size_t health_json(const char *buf, size_t len, struct health_walk *w)
{
	json_t *root = NULL, *body, *overall, *grp;
	const char *gname, *ov;
	char e[128];

	if (jsonx_parse(buf, len, &root, e, sizeof(e)) < 0) {
		w->unknown = 1;
		return 0;
	}
	body = json_object_get(root, "body");
	overall = json_object_get(body, "Overall Health");
	ov = json_string_value(json_object_get(overall, "value"));
	if (!ov || health_word(ov) < 0)
		w->unknown = 1;
	json_object_foreach(body, gname, grp) {
		json_t *ents = json_object_get(grp, "children"), *ent;
		const char *eid;
		if (strcmp(gname, "Overall Health") == 0)
			continue;
		json_object_foreach(ents, eid, ent) {
			json_t *systems = json_object_get(
				json_object_get(json_object_get(ent, "children"), "Errors"),
				"children");
			json_t *sysv;
			const char *sname;
			char *endp;
			long id = strtol(eid, &endp, 10);
			if (*endp)
				id = -1;
			json_object_foreach(systems, sname, sysv) {
				struct agent_finding *last;
				const char *val = json_string_value(json_object_get(sysv, "value"));
				json_t *ovf = json_object_get(sysv, "overflow"), *line;
				size_t i;
				health_incident(w, gname, id, sname, val ? val : "", &last);
				json_array_foreach(ovf, i, line)
					if (last && json_is_string(line))
						append_msg(last, json_string_value(line));
			}
		}
	}
	if (ov && health_word(ov) > 0 && w->n == 0)
		w->unknown = 1;
	json_decref(root);
	return w->n;
}

size_t dcgm_health_findings(const char *buf, size_t len, struct agent_finding *out, size_t max,
			    int *unknown)
{
	struct health_walk w = {out, max, 0, 0};
	struct agent_finding *last = NULL;
	char line[ROW_LEN], left[ROW_LEN], right[ROW_LEN], group[32] = "", sys[64] = "";
	int overall = -2, closed = 0, in_table = 0;
	long id = -1;
	size_t pos = 0, i = 0;

	*unknown = 0;
	if (len > DCGM_MAX_INPUT) {
		*unknown = 1;
		return 0;
	}
	while (i < len && isspace((unsigned char)buf[i]))
		i++;
	if (i < len && buf[i] == '{') {
		size_t n = health_json(buf, len, &w);
		*unknown = w.unknown;
		return n;
	}
	while (pos < len) {
		size_t end = pos;
		enum row_kind k;
		while (end < len && buf[end] != '\n')
			end++;
		ascii_line(buf + pos, end - pos, line, sizeof(line));
		pos = end + 1;
		k = split_row(line, left, right, sizeof(left));
		if (k == ROW_OTHER)
			continue;
		in_table = 1;
		closed = k == ROW_BORDER;
		if (k != ROW_CELLS)
			continue;
		if (strcmp(left, "Overall Health") == 0) {
			overall = health_word(right);
		} else if (strncmp(left, "-> ", 3) == 0) {
			const char *name = left + 3;
			char *endp;
			long v = strtol(name, &endp, 10);
			last = NULL;
			if (endp != name && *endp == '\0') {
				id = v;
				if (health_word(right) < 0)
					w.unknown = 1;
			} else if (strcmp(name, "Errors") != 0 && group[0]) {
				set_str(sys, sizeof(sys), name);
				health_incident(&w, group, id, sys, right, &last);
			}
		} else if (left[0] == '\0') {
			if (last)
				append_msg(last, right);
		} else if (right[0] == '\0' && !strchr(left, ' ')) {
			set_str(group, sizeof(group), left);
			id = -1;
			last = NULL;
		}
	}
	if (!in_table || !closed || overall < 0 || (overall > 0 && w.n == 0))
		w.unknown = 1;
	*unknown = w.unknown;
	return w.n;
}

int dcgm_tool_error(const char *buf, size_t len, char *err, size_t errlen)
{
	size_t pos = 0;
	if (len > DCGM_MAX_INPUT)
		len = DCGM_MAX_INPUT;
	while (pos < len) {
		size_t end = pos, b = pos;
		while (end < len && buf[end] != '\n')
			end++;
		while (b < end && (buf[b] == ' ' || buf[b] == '\t'))
			b++;
		if (end - b >= 7 && memcmp(buf + b, "Error: ", 7) == 0) {
			char line[ROW_LEN];
			size_t n = end - b < sizeof(line) - 1 ? end - b : sizeof(line) - 1;
			memcpy(line, buf + b, n);
			line[n] = '\0';
			agent_text_trim(line);
			snprintf(err, errlen, "dcgmi failed: %s", line);
			return 1;
		}
		pos = end + 1;
	}
	return 0;
}

/* dcgmi diag test name -> subsystem code. */
static const char *diag_subsystem(const char *test)
{
	char l[64];
	size_t i;
	for (i = 0; test[i] && i + 1 < sizeof(l); i++)
		l[i] = (char)tolower((unsigned char)test[i]);
	l[i] = '\0';
	if (strstr(l, "memory") || strstr(l, "memtest") || strstr(l, "row remap"))
		return "memory";
	if (strstr(l, "pcie"))
		return "pcie";
	if (strstr(l, "nvlink"))
		return "nvlink";
	if (strstr(l, "inforom"))
		return "inforom";
	if (strstr(l, "power"))
		return "power";
	return "diag";
}

/* Reads one diag result cell; returns 1 if it is a result ("Pass", "Fail - All",
 * "Fail - GPU: 3", "Warn - GPUs: 0, 1", "Skip - All"), adding findings for Fail/Warn. */
static int diag_result(const char *test, const char *cell, struct agent_finding *out, size_t max,
		       size_t *n)
{
	static const char *const words[] = {"Pass", "Skip", "Warn", "Fail"};
	const char *rest = NULL, *word = NULL;
	for (size_t i = 0; i < 4; i++) {
		size_t l = strlen(words[i]);
		if (strncmp(cell, words[i], l) == 0) {
			word = words[i];
			rest = cell + l;
			if (strncmp(rest, "ing", 3) == 0 || strncmp(rest, "ed", 2) == 0)
				rest += rest[0] == 'i' ? 3 : 2;
			break;
		}
	}
	if (!word || (*rest && strncmp(rest, " - ", 3) != 0))
		return 0;
	if (*rest)
		rest += 3;
	if (word[0] == 'P' || word[0] == 'S')
		return 1;
	if (strncmp(rest, "GPU: ", 5) == 0 || strncmp(rest, "GPUs: ", 6) == 0) {
		const char *p = strchr(rest, ':') + 1;
		while (*p) {
			char *endp;
			long g = strtol(p, &endp, 10);
			struct agent_finding *f;
			if (endp == p)
				break;
			f = new_finding(out, max, n, diag_subsystem(test),
					g >= 0 && g < 100000 ? (int)g : -1);
			if (f) {
				snprintf(f->key, sizeof(f->key), "%s/%s", test, word);
				snprintf(f->message, sizeof(f->message),
					 "dcgmi diag %s: %s on GPU %ld", test, word, g);
			}
			p = endp;
			while (*p == ',' || *p == ' ')
				p++;
		}
	} else {
		struct agent_finding *f = new_finding(out, max, n, diag_subsystem(test), -1);
		if (f) {
			snprintf(f->key, sizeof(f->key), "%s/%s", test, word);
			snprintf(f->message, sizeof(f->message), "dcgmi diag %s: %s%s%s", test,
				 word, *rest ? " - " : "", rest);
		}
	}
	return 1;
}

size_t dcgm_diag_findings(const char *buf, size_t len, struct agent_finding *out, size_t max,
			  int *unknown)
{
	char line[ROW_LEN], left[ROW_LEN], right[ROW_LEN], section[32] = "", test[64] = "";
	size_t n = 0, test_first = 0, pos = 0;
	int header = 0, tests = 0, closed = 0, detail = 0, detail_lines = 0;

	*unknown = 0;
	if (len > DCGM_MAX_INPUT) {
		*unknown = 1;
		return 0;
	}
	while (pos < len) {
		size_t end = pos;
		enum row_kind k;
		while (end < len && buf[end] != '\n')
			end++;
		ascii_line(buf + pos, end - pos, line, sizeof(line));
		pos = end + 1;
		k = split_row(line, left, right, sizeof(left));
		if (k == ROW_OTHER) {
			if ((header || tests) && line[0])
				closed = 0; /* text after the table started: cut or mangled */
			continue;
		}
		closed = k == ROW_BORDER;
		if (k == ROW_SECTION) {
			set_str(section, sizeof(section), left);
			detail = 0;
			continue;
		}
		if (k != ROW_CELLS)
			continue;
		if (strcmp(left, "Diagnostic") == 0 && strcmp(right, "Result") == 0) {
			header = 1;
			continue;
		}
		if (strcmp(section, "Metadata") == 0)
			continue;
		if (strcmp(left, "Info") == 0 || strcmp(left, "Warning") == 0) {
			detail = 1;
			detail_lines = 0;
		} else if (left[0] == '\0') {
			if (!detail && test[0] && diag_result(test, right, out, max, &n))
				continue;
		} else {
			set_str(test, sizeof(test), left);
			detail = 0;
			test_first = n;
			tests++;
			if (!diag_result(test, right, out, max, &n))
				*unknown = 1;
			continue;
		}
		/* a detail row: the first lines of the first Info/Warning go to the findings */
		if (detail && detail_lines++ < 4)
			for (size_t i = test_first; i < n; i++)
				append_msg(&out[i], right);
	}
	if (!tests || !closed)
		*unknown = 1;
	return n;
}
