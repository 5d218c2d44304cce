// Package experiment reruns the papers' experiments on real kernel TCP
// through ecnswitch: `ecnswitch experiment NAME` and `make experiments`.
//
// Each Experiment brings up a testbed (package testbed) whose hosts run
// the paper's transport with the paper's RTO_min (DCTCP for 000, 001 and
// 003, ECN* for 002, transport/udp's endpoints for 004), runs its flows
// through an ecnswitch on AF_XDP ports with its CPUs placed by node (the
// worker on a CPU of its own, the hosts' TCP and receive processing on the
// rest), tears everything down, and returns a Report: report.md,
// claims.json and PNG plots (gonum/plot), the paper's figure or table
// number and value beside ours, the median of DefaultRuns runs with their
// range, with whether the direction and rough magnitude hold, and the
// bottleneck port's busy fraction beside every number. Every run records
// where the machine's time went (demo.Load: each CPU's busy split, the
// worker's, the senders' TCP limits) and what the switch dropped, by
// reason and packet kind (demo.DropTap). A run whose port was busy less
// than MinBusy of the time is marked not comparable when the machine
// limited it; a port left idle by cwnd-limited senders on CPUs with time
// to spare is the scheme's and the transport's utilisation, a result.
//
// Rates default to 995 Mbit/s, 99.5% of 1 Gbit/s (001 §4.2). Experiments
// from papers measured at 10 Gbit/s scale their time constants with
// Scaling, keeping every threshold's bytes C·T (000 §3.2 Eq. 2); each
// report says how. bcc-shared, from a 100 Gbit/s testbed with megabytes
// of buffer, instead keeps every buffer size's ratio to the per-port
// threshold K, and runs at 200 Mbit/s, where one CPU can carry its hosts'
// TCP and UDP blast.
//
// Every experiment runs through one kit, and its file holds only its
// workload and its claims: kit.go brings the testbed and each run's switch
// up and down (Env.demo, Env.withBed, bed.withSwitch) and starts the report
// with its header (the command, the date, and the binary, kernel and CPU
// it ran on: Report.Build); rule.go's builders give each Claim its Rule, whose
// verdict and text come from one expression; stats.go has the statistics
// and repeated measurements (Runs), format.go how numbers print,
// results.go what several experiments read from demo.Run's results, and
// udprig.go the transport/udp endpoints, tap and receiver of dx and
// dx-steps.
//
// The flow-size distributions of the web-search and data-mining workloads
// ship as data files in workloads/ (Workload), each citing its source.
package experiment
