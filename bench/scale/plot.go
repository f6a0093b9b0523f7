package scale

import (
	"fmt"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// series is one line of a plot: a figure against the dimension's size.
type series struct {
	name string
	y    func(i int) float64
}

// Plot draws one log-log PNG per measured dimension in dir, keys.png
// and dbs.png, with note under the title, and returns their paths. Each figure is drawn relative to
// its value at the smallest size, so that every line starts at 1 and
// its slope is its growth; a dashed line of slope 1 is linear growth.
func (res *Results) Plot(dir, note string) ([]string, error) {
	var out []string
	if len(res.Keys) > 0 {
		xs := make([]float64, len(res.Keys))
		for i, p := range res.Keys {
			xs[i] = float64(p.Keys)
		}
		k := res.Keys
		path := filepath.Join(dir, "keys.png")
		err := drawGrowth(path, "spangle: keys on one storaged"+sub(note), "keys", xs, []series{
			{"load to ACTIVE (s)", func(i int) float64 { return k[i].LoadS }},
			{"decode-only (s)", func(i int) float64 { return k[i].DecodeS }},
			{"peak RSS loading (MB)", func(i int) float64 { return k[i].LoadPeakMB }},
			{"RSS serving (MB)", func(i int) float64 { return k[i].ServingMB }},
			{"local store on disk (MB)", func(i int) float64 { return k[i].StoreMB }},
			{"random GET throughput (req/s)", func(i int) float64 { return k[i].ReqPerS }},
			{"GET p99 at half load (ms)", func(i int) float64 { return k[i].P99Ms }},
		})
		if err != nil {
			return out, err
		}
		out = append(out, path)
	}
	if len(res.DBs) > 0 {
		xs := make([]float64, len(res.DBs))
		for i, p := range res.DBs {
			xs[i] = float64(p.DBs)
		}
		d := res.DBs
		path := filepath.Join(dir, "dbs.png")
		err := drawGrowth(path, "spangle: dbs in one cluster"+sub(note), "dbs (8 partitions each)", xs, []series{
			{"start to every db served (s)", func(i int) float64 { return d[i].ActiveS }},
			{"znodes", func(i int) float64 { return float64(d[i].ZK.Znodes) }},
			{"watches", func(i int) float64 { return float64(d[i].ZK.Watches) }},
			{"ZK packets for one db's new version", func(i int) float64 { return d[i].changePackets() }},
			{"ZK bytes to routerd for it", func(i int) float64 { return d[i].changeBytes("routerd") }},
			{"new version to routerd (s)", func(i int) float64 { return d[i].NewVersionS }},
			{"complete in ZooKeeper to routerd (ms)", func(i int) float64 { return d[i].CompleteToRouterdMs }},
			{"routerd RSS (MB)", func(i int) float64 { return d[i].RouterdMB }},
			{"routerd Go heap (MB)", func(i int) float64 { return d[i].RouterdHeapMB }},
			{"storaged open files (largest)", func(i int) float64 { return float64(d[i].StoragedFDs) }},
			{"status page render (ms)", func(i int) float64 { return d[i].RenderMs }},
		})
		if err != nil {
			return out, err
		}
		out = append(out, path)
	}
	return out, nil
}

// drawGrowth plots each series divided by its first positive value.
func drawGrowth(path, title, xlabel string, xs []float64, ss []series) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel + " (log)"
	p.Y.Label.Text = "relative to the smallest size (log)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = countTicks{}, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	// Fixed ranges with a margin: gonum's own would be empty for a single
	// size, and a log axis cannot start at 0.
	p.X.Min, p.X.Max = xs[0]/1.5, xs[len(xs)-1]*1.5
	p.Y.Min, p.Y.Max = 1.0, 1.0
	for i, s := range ss {
		var pts plotter.XYs
		base := 0.0
		for j, x := range xs {
			y := s.y(j)
			if y <= 0 {
				continue // not measured, or nothing to draw on a log scale
			}
			if base == 0 {
				base = y
			}
			pts = append(pts, plotter.XY{X: x, Y: y / base})
			p.Y.Min, p.Y.Max = min(p.Y.Min, y/base), max(p.Y.Max, y/base)
		}
		if len(pts) == 0 {
			continue
		}
		l, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return fmt.Errorf("scale: plot: %w", err)
		}
		// Colours and shapes repeat after 7 series; a dash pattern then
		// tells the lines apart.
		l.Color, sc.Color = plotutil.Color(i), plotutil.Color(i)
		sc.Shape = plotutil.Shape(i)
		l.Dashes = plotutil.Dashes(i / len(plotutil.DefaultColors))
		p.Add(l, sc)
		p.Legend.Add(s.name, l, sc)
	}
	if len(xs) > 1 {
		lin, err := plotter.NewLine(plotter.XYs{{X: xs[0], Y: 1}, {X: xs[len(xs)-1], Y: xs[len(xs)-1] / xs[0]}})
		if err != nil {
			return fmt.Errorf("scale: plot: %w", err)
		}
		lin.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
		lin.Color = plotutil.Color(len(ss))
		p.Add(lin)
		p.Legend.Add("linear growth", lin)
		p.Y.Max = max(p.Y.Max, xs[len(xs)-1]/xs[0])
	}
	p.Y.Min, p.Y.Max = p.Y.Min/2, p.Y.Max*2
	p.Legend.ThumbnailWidth = vg.Points(20)
	p.Legend.Padding = vg.Points(1)
	if err := p.Save(9*vg.Inch, 6*vg.Inch, path); err != nil {
		return fmt.Errorf("scale: plot: %w", err)
	}
	return nil
}

// sub is the note under a plot's title, if any.
func sub(note string) string {
	if note == "" {
		return ""
	}
	return "\n" + note
}

// countTicks are log ticks labelled as counts are in the tables (1M,
// 100k, 500) rather than as 1e+06.
type countTicks struct{}

// Ticks returns plot.LogTicks' ticks with their labels rewritten.
func (countTicks) Ticks(min, max float64) []plot.Tick {
	ticks := plot.LogTicks{Prec: -1}.Ticks(min, max)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = count(int(ticks[i].Value + 0.5))
		}
	}
	return ticks
}
