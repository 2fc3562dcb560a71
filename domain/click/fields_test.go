package click_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/domain/click/clicktest"
)

// AppendJSON writes every field of click.Recorded (found by reflection over
// its JSON tags), as encoding/json does: a field added to the struct but
// not to the encoder fails here, whatever its tag says.
func TestAppendJSONWritesEveryField(t *testing.T) {
	t.Parallel()
	check := func(name string, r click.Recorded) []byte {
		t.Helper()
		want, err := json.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		got := r.AppendJSON(nil)
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
		return got
	}
	check("every field", clicktest.Full())
	for _, f := range clicktest.Fields() {
		if data := check(f.Name, f.Only()); !bytes.Contains(data, []byte(`"`+f.Name+`":`)) {
			t.Errorf("%s: not in %s", f.Name, data)
		}
	}
}
