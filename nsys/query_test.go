package nsys

import (
	"fmt"
	"strings"
	"testing"
)

// columnQueries are the queries of every table reader of the direct path, with the
// place each reader reads its row's mask at (the number of columns it names).
func columnQueries() map[string]struct {
	q    *tableQuery
	mask int
} {
	kept := []bool{true}
	return map[string]struct {
		q    *tableQuery
		mask int
	}{
		"kernels":        {kernelQuery("demangledName"), kernelCols},
		"kernels, short": {kernelQuery("shortName"), kernelCols},
		"calls":          {callQuery(kept), callCols},
		"memcpy":         {memopQuery("CUPTI_ACTIVITY_KIND_MEMCPY"), memopCols},
		"memset":         {memopQuery("CUPTI_ACTIVITY_KIND_MEMSET"), memopCols},
		"graphs":         {graphQuery(), graphCols},
		"nvtx":           {nvtxQuery(true), nvtxCols},
		"nvtx, no text":  {nvtxQuery(false), nvtxCols},
	}
}

// checkColumns says what is wrong with a column list a reader reads its rows by: the
// mask where the reader does not look for it, a place the list leaves unset (the zero
// tableCol, which the reader would read as a constant 0), a column asked for twice, start
// and end not at colStart and colEnd (dropCounter.keep reads those bits of the mask),
// deviceId elsewhere than colDevice (keepDevice), a filter column not read.
func checkColumns(q *tableQuery, mask int) error {
	var errs []string
	if len(q.cols) != mask {
		errs = append(errs, fmt.Sprintf("%d columns, but the reader reads the mask at %d", len(q.cols), mask))
	}
	seen := map[string]int{}
	for i, c := range q.cols {
		switch {
		case c == tableCol{}:
			errs = append(errs, fmt.Sprintf("place %d is unset", i))
		case c.name != "":
			if j, dup := seen[strings.ToLower(c.name)]; dup {
				errs = append(errs, fmt.Sprintf("%s at %d and %d", c.name, j, i))
			}
			seen[strings.ToLower(c.name)] = i
		}
	}
	for name, at := range map[string]int{"start": colStart, "end": colEnd} {
		if at >= len(q.cols) || q.cols[at].name != name {
			errs = append(errs, fmt.Sprintf("%s is not at %d", name, at))
		}
	}
	if i, ok := seen["deviceid"]; ok && i != colDevice {
		errs = append(errs, fmt.Sprintf("deviceId at %d, not %d", i, colDevice))
	}
	if _, ok := seen[strings.ToLower(q.in)]; q.in != "" && !ok {
		errs = append(errs, "the filter column "+q.in+" is not read")
	}
	if errs != nil {
		return fmt.Errorf("%s: %s", q.table, strings.Join(errs, "; "))
	}
	return nil
}

// TestColumnLists holds every table reader's column list to the places the reader reads:
// each reader builds its list keyed by the names of its places (kernelStart, ...), and a
// list that leaves a place unset, or reads start, end or deviceId elsewhere than the row
// checks look, fails here before a row is read wrong.
func TestColumnLists(t *testing.T) {
	for name, c := range columnQueries() {
		if err := checkColumns(c.q, c.mask); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestColumnListsDrift: checkColumns finds the ways a list and its reader drift apart.
func TestColumnListsDrift(t *testing.T) {
	good := func() *tableQuery { return kernelQuery("demangledName") }
	for name, drift := range map[string]func() (*tableQuery, int){
		"a column added without a place": func() (*tableQuery, int) {
			q := good()
			q.cols = append(q.cols, needCol("contextId"))
			return q, kernelCols
		},
		"a place without a column": func() (*tableQuery, int) {
			q := good()
			q.cols = append(q.cols[:kernelStream], q.cols[kernelStream+1:]...)
			return q, kernelCols
		},
		"a place left unset": func() (*tableQuery, int) {
			q := good()
			q.cols[kernelPID] = tableCol{}
			return q, kernelCols
		},
		"start and end swapped": func() (*tableQuery, int) {
			q := good()
			q.cols[kernelStart], q.cols[kernelEnd] = q.cols[kernelEnd], q.cols[kernelStart]
			return q, kernelCols
		},
		"deviceId moved": func() (*tableQuery, int) {
			q := good()
			q.cols[kernelDevice], q.cols[kernelStream] = q.cols[kernelStream], q.cols[kernelDevice]
			return q, kernelCols
		},
		"a column read twice": func() (*tableQuery, int) {
			q := good()
			q.cols[kernelPID] = needCol("StreamId")
			return q, kernelCols
		},
		"the filter column not read": func() (*tableQuery, int) {
			q := callQuery([]bool{true})
			q.cols[callName] = optCol("nameIdx", 0)
			return q, callCols
		},
	} {
		q, mask := drift()
		if err := checkColumns(q, mask); err == nil {
			t.Errorf("%s: not found", name)
		}
	}
}
