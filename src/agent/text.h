/* agent/text.h - small text helpers shared by the agent's parsers of tool output (nvsmi.c,
 * dcgm.c, ibstat.c). Pure. */
#ifndef FP_AGENT_TEXT_H
#define FP_AGENT_TEXT_H

/* Removes leading and trailing ASCII white space (isspace in the C locale) from the
 * NUL-terminated s, in place. */
void agent_text_trim(char *s);

#endif
