// Package buffer models the memory-management unit (MMU) of a shared-buffer
// switching chip: shared pools, a private reserve per egress queue, Dynamic
// Threshold admission, exact byte and packet accounting of every queue, port
// and pool, and drop counters by reason. It only counts bytes; frames live
// in the ports' fixed arenas and descriptors in the scheduler's queues.
//
// # The model (002 §II-A, §IV-B Eq. 1)
//
// The buffer is divided into private pools, one per egress queue, and
// shared pools, each used by the queues of several ports (002 §II-A).
// [Config] gives every queue a private Reserve and attaches every port to one
// shared pool of B bytes. An arriving packet first goes to its queue's
// private pool; what does not fit there goes to the shared pool, where the
// Dynamic Threshold (DT) algorithm of Choudhury and Hahne decides (002 §II-A,
// reference [15]). A packet is admitted whole or dropped whole, and only
// arriving packets are dropped: nothing already buffered is pushed out.
//
// Accounting is by byte, as a chip accounts by cell: of the B_q bytes a queue
// holds, the first Reserve are private and the rest,
//
//	S_q = max(0, B_q − Reserve),
//
// are shared. A packet that straddles the reserve puts its first bytes in
// the private pool and the rest in the shared pool; on release a queue gives
// back shared bytes first, so its reserve stays filled as long as possible.
// Release therefore needs only the packet's size, never a per-packet tag.
//
// DT is 002 §IV-B Eq. 1:
//
//	T(t) = α × (B − Σ_{i=1}^{N} Q_i(t))
//
// and "a packet arriving in queue i at time t will get dropped if
// Q_i(t) ≥ T(t)". 002 states the model "with no buffer reserved for each
// queue", so there Q_i is simply the queue length and Σ Q_i is, in the words
// under its Eq. 2, "the occupancy of the shared buffer pool". With reserves,
// this package keeps that meaning: Q_i is the queue's shared occupancy S_q,
// and Σ Q_i is the pool's shared occupancy (the sum of S_q over every queue
// of every port attached to the pool); private bytes count in neither, just
// as a chip's min-guarantee cells do not count against its shared limit.
// The consequence 002 §IV-B quotes from [15] then holds for the shared part:
// with M saturated queues of equal α, each settles at α·B/(1 + M·α) shared
// bytes (within one packet, since the test is made before the packet is
// added), and TestDynamicThresholdSteadyState checks exactly that.
//
// Instead of DT a queue may have a static Cap: its shared occupancy after the
// packet must not exceed Cap bytes (so the queue never holds more than
// Reserve + Cap bytes). Either way, the shared part must also fit in the
// pool's free space, or the packet is dropped as [PoolFull].
//
// α may be any positive value up to 256; 002 §IV-B notes chips use powers
// of two, 1/128 to 8 on Broadcom Tomahawk, and 002 §III-C and §V-A use α = 4 with
// B = 3 MB per 8 ports.
//
// # Concurrency
//
// A port and its queues are written only by the port's owning worker:
// [MMU.Admit], [MMU.Release] and [MMU.CountDrop] for a port must be called
// from one goroutine at a time. A pool is shared by ports that different
// workers own, so its shared occupancy is claimed with a compare-and-swap
// loop that re-evaluates the DT and pool-space tests on the value it swaps
// (see [MMU.Admit] for why not add-then-undo); it is the only counter two
// workers write, and a packet that stays within its queue's reserve does not
// touch it at all. Every counter may be read from any goroutine, so
// telemetry and markers may read anything: the pool's occupancy is an
// atomic, and a queue's counters, which have one writer, are
// internal/counter's, added without a locked instruction and read
// atomically. Each counter is exact on its own, but
// two counters read one after the other may straddle an admission. Port and
// pool totals of bytes and packets are sums of their queues' counters, made
// when read, so that Admit and Release write only the queue's two counters
// (and the pool's shared occupancy when the packet goes beyond the reserve).
// Admit and Release take no lock and allocate nothing.
package buffer
