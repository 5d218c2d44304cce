package timestamp

// Foreign clocks — a NIC's hardware clock (PHC), CLOCK_TAI, which the
// kernel's AF_XDP completion stamps use — are put on the switch's clock by
// an offset, measured the way PTP_SYS_OFFSET does: read the local clock,
// the foreign one, the local one again, and take the foreign reading as
// simultaneous with the midpoint. Of several tries the narrowest bracket
// wins; its half-width bounds the error.

// Bracket is one foreign reading between two local ones, in ns.
type Bracket struct {
	Before, Foreign, After int64
}

// Offset returns foreign − local at the bracket's midpoint, and the
// bracket's width.
func (b Bracket) Offset() (offset, width int64) {
	return b.Foreign - (b.Before + (b.After-b.Before)/2), b.After - b.Before
}

// BestOffset returns the offset of the narrowest bracket and its width;
// ok is false when there are none, or none with After ≥ Before.
func BestOffset(bs []Bracket) (offset, width int64, ok bool) {
	for _, b := range bs {
		o, w := b.Offset()
		if w < 0 {
			continue
		}
		if !ok || w < width {
			offset, width, ok = o, w, true
		}
	}
	return offset, width, ok
}

// Correlate brackets foreign between two local readings tries times and
// returns BestOffset's offset (foreign − local) and width.
func Correlate(local, foreign func() int64, tries int) (offset, width int64) {
	var best Bracket
	for i := range max(tries, 1) {
		b := Bracket{Before: local()}
		b.Foreign = foreign()
		b.After = local()
		if i == 0 || b.After-b.Before < best.After-best.Before {
			best = b
		}
	}
	return best.Offset()
}
