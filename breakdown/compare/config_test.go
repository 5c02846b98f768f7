package compare

import (
	"fmt"
	"testing"

	"github.com/stepstat/stepstat/nsys"
)

func TestSideConfig(t *testing.T) {
	runs := [][]nsys.EnvVar{
		{{Name: "A", Value: "1"}, {Name: "B", Value: "x"}},
		{{Name: "A", Value: "1"}, {Name: "B", Value: "y"}, {Name: "C", Value: "z"}},
	}
	if got, want := fmt.Sprint(sideConfig(runs)), "[{A 1} {B x | y} {C (unset) | z}]"; got != want {
		t.Errorf("sideConfig = %s, want %s", got, want)
	}
	ch := configChanges([]nsys.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "x"}}, []nsys.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: ""}})
	if len(ch) != 1 || ch[0] != (ConfigChange{Name: "B", Base: "x", New: "", BaseSet: true, NewSet: true}) {
		t.Errorf("configChanges = %+v", ch)
	}
}
