package buffer

// Reason is the outcome of an admission: [Admitted], or why a packet was
// dropped. The dataplane counts drops decided elsewhere (by a marker) with
// the same enum, so one array of [NumReasons] counters covers every drop.
type Reason uint8

// Reasons.
const (
	// Admitted: the packet was accepted and accounted. It is the zero value.
	Admitted Reason = iota
	// PoolFull: the packet's shared part does not fit in the pool's free
	// shared space (002 §II-A: "if there is not enough buffer space, the
	// packet will get dropped").
	PoolFull
	// DynamicThreshold: the queue's shared occupancy Q_i is at or above
	// T = α·(B − ΣQ) (002 §IV-B Eq. 1).
	DynamicThreshold
	// StaticCap: the queue's shared occupancy would exceed its static Cap.
	StaticCap
	// Marker: a marker returned Drop (e.g. a non-ECT packet it would have
	// marked); recorded with [MMU.CountDrop], never returned by Admit.
	Marker

	// NumReasons is the number of reasons, for sizing counter arrays.
	NumReasons = iota
)

// String returns the reason's lowercase name, as telemetry labels it.
func (r Reason) String() string {
	switch r {
	case Admitted:
		return "admitted"
	case PoolFull:
		return "pool_full"
	case DynamicThreshold:
		return "dynamic_threshold"
	case StaticCap:
		return "static_cap"
	case Marker:
		return "marker"
	}
	return "reason(?)"
}
