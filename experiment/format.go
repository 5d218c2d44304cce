package experiment

import (
	"fmt"
	"time"
)

// How the reports print their numbers.

// micros formats d in whole microseconds: "263 µs".
func micros(d time.Duration) string {
	return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
}

// millis formats d in milliseconds to two decimals, "–" for zero.
func millis(d time.Duration) string {
	if d == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f ms", d.Seconds()*1e3)
}

// mbps formats bit/s as whole Mbit/s.
func mbps(bps float64) string { return fmt.Sprintf("%.0f Mbit/s", bps/1e6) }

// rate formats a link's bit/s in Gbit/s or Mbit/s: "10 Gbit/s", "995 Mbit/s".
func rate(bps int64) string {
	if bps >= 1e9 && bps%1e8 == 0 {
		return fmt.Sprintf("%g Gbit/s", float64(bps)/1e9)
	}
	return fmt.Sprintf("%g Mbit/s", float64(bps)/1e6)
}

// lowerBy formats the fraction f by which a value is lower than the one it
// is compared with (1 − ours/theirs): "49% lower", or "49% higher" when f
// is negative, never "-49% lower".
func lowerBy(f float64, prec int) string {
	word := "lower"
	if f < 0 {
		f, word = -f, "higher"
	}
	return fmt.Sprintf("%.*f%% %s", prec, 100*f, word)
}

// flows formats a number of flows: "1 flow", "4 flows".
func flows(n int) string {
	if n == 1 {
		return "1 flow"
	}
	return fmt.Sprintf("%d flows", n)
}
