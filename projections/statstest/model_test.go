package statstest

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/linkd/linkd/queries"
)

// The suite runs on the model: it counts the fixture as the records written
// by hand say.
func TestModel(t *testing.T) {
	Run(t, func(t *testing.T) Store { return NewModel() })
}

// Diff sees a difference in every field of a record, those added to
// queries.DailyStats later included.
func TestDiffComparesEveryField(t *testing.T) {
	t.Parallel()
	base := fixtureRecords().workspaces[ws1][0]
	if d := Diff([]queries.DailyStats{base}, []queries.DailyStats{base}); d != "" {
		t.Fatalf("a record differs from itself: %s", d)
	}
	v := reflect.ValueOf(&base).Elem()
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		changed := base
		f := reflect.ValueOf(&changed).Elem().Field(i)
		switch x := f.Addr().Interface().(type) {
		case *string:
			*x += "x"
		case *int64:
			*x++
		case *time.Time:
			*x = x.Add(time.Second)
		case *map[string]int64:
			*x = map[string]int64{"other": 1}
		default:
			t.Fatalf("field %s of type %s: teach this test (and Diff) about it", name, f.Type())
		}
		d := Diff([]queries.DailyStats{changed}, []queries.DailyStats{base})
		if d == "" || !strings.Contains(d, name) {
			t.Errorf("changed %s: Diff = %q", name, d)
		}
	}
	local := base
	local.FirstClick = local.FirstClick.In(time.FixedZone("UTC+1", 3600))
	if d := Diff([]queries.DailyStats{local}, []queries.DailyStats{base}); !strings.Contains(d, "not in UTC") {
		t.Errorf("a time outside UTC: Diff = %q", d)
	}
	empty := base
	empty.App = nil
	base.App = map[string]int64{}
	if d := Diff([]queries.DailyStats{empty}, []queries.DailyStats{base}); d != "" {
		t.Errorf("a nil map differs from an empty one: %s", d)
	}
	if d := Diff(nil, []queries.DailyStats{base}); !strings.Contains(d, "missing record") {
		t.Errorf("a missing record: Diff = %q", d)
	}
}
