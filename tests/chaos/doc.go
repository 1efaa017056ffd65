// Package chaos is cellar's fault-injection and consistency suite (issue
// 9). It starts a real multi-process cluster on loopback (three "cellar
// chubby" replicas, an active and a standby "cellar master", three "cellar
// tabletserver" processes over one dfs directory, and a "cellar gateway"
// serving both pgwire and the Bigtable API), runs clients against both
// front doors while a seeded scheduler kills, pauses and restarts single
// processes and forces tablet splits, moves and merges, and then checks
// what the clients saw:
//
//   - a per-row register (reads, writes, compare-and-swaps through the
//     Bigtable API and SQL on the same rows) is linearizable, checked with
//     porcupine row by row;
//   - every acknowledged unique insert is present at the end and nothing
//     that was never written appears;
//   - each counter's final value lies between its acknowledged and its
//     attempted increments;
//   - after each fault heals the cluster serves every workload again
//     within a stated bound, and the tablets of every table cover its key
//     space without gaps or overlaps;
//   - across the whole run, no key range is served by two tablet servers
//     at once (intervals.go: serving intervals from the servers' logs and
//     the harness's kills and stops).
//
// The harness (Cluster, Proc), the workloads (Workloads) and the
// nemeses (Nemesis, Schedule) are ordinary package files so that other
// fault kinds (network, disk, clock) can reuse them; the tests that run
// them are in chaos_test.go.
package chaos
