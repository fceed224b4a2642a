/* engine/node_metrics.h - per-node and per-site series from the informer cache, for alerts
 * and for joining with node exporters such as NVIDIA dcgm-exporter (which labels its series
 * by Hostname; docs/operations.md "Monitoring and alerts" shows the join). obs (issue 15).
 *
 * Families (gauges), rendered on every scrape from the cache:
 *   fleetplane_site_nodes{site}                       nodes per site
 *   fleetplane_nodes_condition{site,type,status}      nodes per site whose condition type has
 *                                                     that status; every type of the closed set
 *                                                     below and all three statuses, zeros
 *                                                     included (so an alert sees 0, not nothing)
 *   fleetplane_node_info{node,site,rack,pool,phase}   1 per node
 *   fleetplane_node_condition{node,type,status}       1 per node and condition of the closed set
 *                                                     it carries (its current status only)
 *   fleetplane_node_series_limited                    1 when the per-node families were left
 *                                                     out because the fleet has more nodes than
 *                                                     the limit, else 0
 * Cardinality is bounded: condition types come from NODE_METRICS_TYPES (a node's other
 * conditions are not exported), statuses are True/False/Unknown, sites beyond
 * NODE_METRICS_MAX_SITES distinct values share site="_other", and the two per-node families
 * are emitted for all nodes or, above max_nodes, for none. */
#ifndef FP_ENGINE_NODE_METRICS_H
#define FP_ENGINE_NODE_METRICS_H

#include "base/buf.h"
#include "engine/cache.h"

/* The closed set of condition types exported (docs/operations.md "Node conditions"). */
#define NODE_METRICS_TYPES                                                                  \
	"AgentAlive", "BMCReachable", "DetectorsLive", "DisruptionAllowed", "GPUHealthy",   \
		"HealthActionsSuppressed", "InventoryMatchesSpec", "PhaseDeadlineExceeded", \
		"PoweredOn", "Remediation", "SchedulerInSync", "WorkloadDrained"
#define NODE_METRICS_NTYPES 12
#define NODE_METRICS_MAX_SITES 128
#define NODE_METRICS_DEFAULT_MAX_NODES 10000

/* Registers the collector over cache c (borrowed; call node_metrics_unregister before
 * cache_free). max_nodes: the most nodes for which the per-node families are emitted; 0 =
 * NODE_METRICS_DEFAULT_MAX_NODES, negative = never (the per-site families still are). */
void node_metrics_register(struct cache *c, long max_nodes);
/* Removes the collector registered for c; a no-op when there is none. */
void node_metrics_unregister(struct cache *c);

/* Renders the families for cache c with the given limit (as node_metrics_register's) into out;
 * what the collector calls, for tests. */
void node_metrics_render(struct cache *c, long max_nodes, struct buf *out);

#endif
