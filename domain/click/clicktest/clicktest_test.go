package clicktest

import (
	"reflect"
	"testing"
)

// Full sets every field, each to a value no other field has; Only sets one
// field.
func TestValues(t *testing.T) {
	full := reflect.ValueOf(Full())
	fields := Fields()
	if len(fields) != full.NumField() {
		t.Errorf("%d fields in the wire format, click.Recorded has %d: a field without JSON?", len(fields), full.NumField())
	}
	seen := map[any]string{}
	for _, f := range fields {
		v := full.Field(f.index)
		if v.IsZero() {
			t.Errorf("Full leaves %s empty", f.GoName)
		}
		key := v.Interface()
		if v.Kind() == reflect.Pointer {
			key = v.Elem().Interface()
		}
		if other, ok := seen[key]; ok && v.Kind() != reflect.Bool {
			t.Errorf("%s and %s have the same value %v", f.GoName, other, key)
		}
		seen[key] = f.GoName
		only := reflect.ValueOf(f.Only())
		for i := range only.NumField() {
			if set := !only.Field(i).IsZero(); set != (i == f.index) {
				t.Errorf("%s.Only(): field %s set: %v", f.GoName, only.Type().Field(i).Name, set)
			}
		}
	}
}
