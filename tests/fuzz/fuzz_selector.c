/* layers: base core */
/* fuzz_selector.c - libFuzzer target for label selectors (core/codec.c label_selector_parse),
 * which come from API query strings and the CLI. A NUL-terminated copy of the input is parsed;
 * empty selectors and trailing commas must be refused (DESIGN.md principle 5); a parsed
 * selector is matched against a few nodes and must agree with the same labels given as JSON. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "core/codec.h"
#include "core/model.h"

#include "base/banned.h"

static struct node *nodes[4];
static json_t *labels[4];

static void add_label(int i, const char *k, const char *v)
{
	struct node *n = nodes[i];
	n->labels = xreallocarray(n->labels, n->nlabels + 1, sizeof(*n->labels));
	n->labels[n->nlabels].key = xstrdup(k);
	n->labels[n->nlabels].value = xstrdup(v);
	n->nlabels++;
	json_object_set_new(labels[i], k, json_string(v));
}

static void setup(void)
{
	for (int i = 0; i < 4; i++) {
		nodes[i] = node_new();
		labels[i] = json_object();
	}
	add_label(0, "rack", "r01");
	add_label(0, "gpu", "h100");
	add_label(0, "example.com/team", "ml");
	add_label(1, "rack", "r02");
	add_label(1, "k", "");
	add_label(1, "a", "b");
	add_label(3, "nvlink_domain", "nvl-7");
	add_label(3, "pdu", "pdu-a");
	add_label(3, "leaf", "leaf-3");
	/* node 2 has no labels */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!nodes[0])
		setup();
	char *s = xmalloc(size + 1);
	memcpy(s, data, size);
	s[size] = 0;
	struct label_selector *sel = (struct label_selector *)1;
	char err[256];
	err[0] = 0;
	int rc = label_selector_parse(s, &sel, err, sizeof(err));
	size_t len = strlen(s);
	if (rc < 0) {
		if (sel || !err[0])
			abort(); /* refused without a reason, or left a selector behind */
	} else {
		if (rc != 0 || !sel)
			abort();
		if (len == 0 || s[len - 1] == ',' || s[0] == ',' || strstr(s, ",,"))
			abort(); /* empty term accepted */
		for (int i = 0; i < 4; i++) {
			int m = label_selector_match(sel, nodes[i]);
			if (m != 0 && m != 1)
				abort();
			if (m != label_selector_match_json(sel, labels[i]))
				abort(); /* node and JSON forms disagree */
		}
		/* the same string parses the same way again */
		struct label_selector *again = NULL;
		if (label_selector_parse(s, &again, NULL, 0) != 0)
			abort();
		for (int i = 0; i < 4; i++)
			if (label_selector_match(sel, nodes[i]) !=
			    label_selector_match(again, nodes[i]))
				abort();
		label_selector_free(again);
		label_selector_free(sel);
	}
	free(s);
	return 0;
}
