package render

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/go-echarts/go-echarts/v2/opts"
)

// Log axes. ECharts draws a bar on a log axis from the value 1 unless the axis says
// otherwise, so on a share axis every bar under 1% grew from 1% towards the left: the
// smallest category got the longest bar. logAxisFrom puts the axis's minimum and the bars'
// start (ECharts' startValue) at the same floor, a power of ten at or below the smallest
// bar, so that every bar grows from the axis origin. Log axes also label their bars with
// their values, since lengths on them are not proportional.

// logFloor returns the power of ten at or below the smallest positive value (1 when none
// is positive).
func logFloor(values []float64) float64 {
	least := math.Inf(1)
	for _, v := range values {
		if v > 0 && v < least {
			least = v
		}
	}
	if math.IsInf(least, 1) {
		return 1
	}
	return math.Pow(10, math.Floor(math.Log10(least)+1e-9))
}

// logAxisFrom returns a newChart adjustment that sets the axes under key ("xAxis" or
// "yAxis") of type "log" to start at floor, their bars too.
func logAxisFrom(key string, floor float64) func(option map[string]interface{}) {
	return func(option map[string]interface{}) {
		raw, err := json.Marshal(option[key])
		if err != nil {
			return
		}
		var axes []map[string]interface{}
		if json.Unmarshal(raw, &axes) != nil {
			var one map[string]interface{}
			if json.Unmarshal(raw, &one) != nil {
				return
			}
			axes = []map[string]interface{}{one}
		}
		for _, ax := range axes {
			if ax["type"] == "log" {
				ax["min"], ax["startValue"] = floor, floor
			}
		}
		option[key] = axes
	}
}

// barValues returns the numeric values of bars (those a log axis places).
func barValues(data []barValue) []float64 {
	out := make([]float64, 0, len(data))
	for _, v := range data {
		if f, ok := v.(float64); ok {
			out = append(out, f)
		}
	}
	return out
}

// barValue is the Value of an opts.BarData: a number, or "-" for no bar.
type barValue = interface{}

// Legends. A paginated ("scroll") legend shows one line of items and hides the rest
// behind arrows: at 1000 px a timeline's legend clipped its categories. wrapLegend
// returns a plain legend, which wraps its items onto as many lines as they need, and the
// grid top that leaves room for the lines the items take on the narrowest page (a 1000 px
// window: about legendWidth px for the legend of a wide chart).

// Room of a legend at the narrowest page width the report is drawn for (a wide chart, a
// chart of a pair), with a margin for fonts wider than estimated.
const (
	legendWidth     = 760
	halfLegendWidth = 360
)

// wrapLegend returns the legend of the series names, from top, and the grid top below it
// (for a wide chart; wrapLegendIn for another room).
func wrapLegend(names []string, top int) (opts.Legend, int) {
	return wrapLegendIn(names, top, legendWidth)
}

// wrapLegendIn is wrapLegend for a legend of room px.
func wrapLegendIn(names []string, top, room int) (opts.Legend, int) {
	lines, used := 1, 0
	for _, n := range names {
		w := 25 + 5 + 10 + 7*utf8.RuneCountInString(n) // icon, padding, gap, text at 12 px
		if used > 0 && used+w > room {
			lines++
			used = 0
		}
		used += w
	}
	l := opts.Legend{Show: opts.Bool(true), Type: "plain", Top: strconv.Itoa(top), Left: "8", Right: "24"}
	return l, top + 24*lines + 14
}
