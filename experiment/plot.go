package experiment

import (
	"fmt"
	"os"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Line is one line of a plot.
type Line struct {
	Label  string
	XY     plotter.XYs
	Dashed bool
}

// newPlot returns a plot of lines, each in its own color (and, dashed, its
// own dashes), with a grid and a legend at the top left.
func newPlot(title, x, y string, lines []Line) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, y
	p.Add(plotter.NewGrid())
	for i, l := range lines {
		if len(l.XY) == 0 {
			continue
		}
		pl, err := plotter.NewLine(l.XY)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l.Label, err)
		}
		pl.Color = plotutil.Color(i)
		pl.Width = vg.Points(1.2)
		if l.Dashed {
			pl.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		p.Add(pl)
		p.Legend.Add(l.Label, pl)
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.Y.Min = min(p.Y.Min, 0)
	return p, nil
}

// cdf returns the empirical CDF of ds as a line, x in µs.
func cdf(label string, ds []time.Duration) Line {
	s := slices.Clone(ds)
	slices.Sort(s)
	xy := make(plotter.XYs, len(s))
	for i, d := range s {
		xy[i] = plotter.XY{X: float64(d) / float64(time.Microsecond), Y: float64(i+1) / float64(len(s))}
	}
	return Line{Label: label, XY: xy}
}

// saveTiles saves plots in a grid of cols columns, each tile w × h, as a
// PNG at path.
func saveTiles(path string, cols int, plots []*plot.Plot, w, h vg.Length) error {
	rows := (len(plots) + cols - 1) / cols
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
		for j := range cols {
			if k := i*cols + j; k < len(plots) {
				grid[i][j] = plots[k]
			}
		}
	}
	img := vgimg.New(w*vg.Length(cols), h*vg.Length(rows))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 2, PadY: vg.Millimeter * 2,
		PadTop: vg.Millimeter, PadBottom: vg.Millimeter, PadLeft: vg.Millimeter, PadRight: vg.Millimeter}
	canvases := plot.Align(grid, tiles, dc)
	for i := range grid {
		for j, p := range grid[i] {
			if p != nil {
				p.Draw(canvases[i][j])
			}
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
