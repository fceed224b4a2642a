/* run.h - entry points of the process-running subcommands: serve (the control plane), demo (the
 * main job: serve + a simulated fleet, end to end), sim (inspect simulated hardware), agent (the
 * node agent). Each takes argv with argv[0] = the subcommand's name and returns the process exit
 * code. */
#ifndef FP_CMD_RUN_H
#define FP_CMD_RUN_H

int cmd_serve(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_sim(int argc, char **argv);
/* The stepped fleet as `fleetplane sim`'s control plane (sim/sim_plane.h; static). */
struct sim_plane_ops;
const struct sim_plane_ops *cmd_sim_plane(void);
/* fleetplane sim state --data-dir DIR [NODE...] (demo.c): saved simulated machines */
int cmd_sim_state(int argc, char **argv);
/* fleetplane agent --node NAME ...: the node agent (docs/agent.md); exit codes as the client
 * commands (cmds.h), 3 when --once could not reach the API. */
int cmd_agent(int argc, char **argv);

#endif
