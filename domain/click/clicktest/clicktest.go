// Package clicktest makes click.Recorded values for the tests of the
// ClickRecorded wire format, which is written in three places: the JSON
// tags of click.Recorded, its encoder (click.Recorded.AppendJSON) and its
// decoder (click.Recorded.DecodePlain). Fields finds the fields by reflection
// over the tags, so a field added to click.Recorded is in every test that
// uses this package at once; each gets a value of its own, so a test tells
// a field that is missing from the JSON from one read into another field.
package clicktest

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/linkd/linkd/domain/click"
)

// Field is a field of click.Recorded in the wire format.
type Field struct {
	Name   string // JSON name, from the tag
	GoName string
	index  int
}

var recordedType = reflect.TypeFor[click.Recorded]()

// Fields are the fields of click.Recorded that its JSON holds, in the order
// of the struct.
func Fields() []Field {
	var out []Field
	for i := range recordedType.NumField() {
		sf := recordedType.Field(i)
		if !sf.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = sf.Name // what encoding/json does without a name
		}
		out = append(out, Field{Name: name, GoName: sf.Name, index: i})
	}
	return out
}

// Only is a click with this field set, and no other.
func (f Field) Only() click.Recorded {
	var r click.Recorded
	f.set(&r)
	return r
}

// Full is a click with every field set, each to a value of its own.
func Full() click.Recorded {
	var r click.Recorded
	for _, f := range Fields() {
		f.set(&r)
	}
	return r
}

// base is the time from which time fields get their values.
var base = time.Date(2026, 3, 1, 10, 0, 0, 123_456_789, time.UTC)

// set gives the field of r its value: a string that names the field, true,
// or a time of its own (different hours, fractions of a second).
func (f Field) set(r *click.Recorded) {
	v := reflect.ValueOf(r).Elem().Field(f.index)
	at := base.Add(time.Duration(f.index)*time.Hour + time.Duration(f.index)*time.Millisecond)
	switch p := v.Addr().Interface().(type) {
	case *string:
		*p = f.Name + "-value"
	case *bool:
		*p = true
	case *time.Time:
		*p = at
	case **time.Time:
		*p = &at
	default:
		panic(fmt.Sprintf("clicktest: field %s of click.Recorded is a %s: give that type a value in Field.set", f.GoName, v.Type()))
	}
}
