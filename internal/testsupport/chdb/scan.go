package chdb

import (
	"database/sql"
	"fmt"
	"math/big"
	"reflect"
	"strconv"
	"time"

	"github.com/google/uuid"
)

var scannerType = reflect.TypeFor[sql.Scanner]()

// scanInto stores v, a value of column type t as decodeTSV made it, in dest,
// a pointer. It converts as clickhouse-go does, and more leniently:
// integers to any integer type, numbers to floats, any scalar to its text
// in a *string, String to *[]byte, NULL to the zero value of a non-pointer
// destination, arrays element by element.
func scanInto(dest any, v reflect.Value, t *colType) error {
	if dest == nil {
		return fmt.Errorf("chdb: nil Scan destination for %s", t.name)
	}
	d := reflect.ValueOf(dest)
	if d.Kind() != reflect.Pointer || d.IsNil() {
		return fmt.Errorf("chdb: Scan destination for %s is not a non-nil pointer but %T", t.name, dest)
	}
	return assign(d.Elem(), v, t)
}

// assign stores v (of type t) in dst.
func assign(dst reflect.Value, v reflect.Value, t *colType) error {
	// NULL of Nullable(Nothing).
	if !v.IsValid() {
		dst.SetZero()
		return nil
	}
	if dst.Kind() == reflect.Interface {
		if t.kind == kNullable && v.IsNil() {
			dst.SetZero() // a nil interface
			return nil
		}
		if !v.Type().AssignableTo(dst.Type()) {
			return cannot(v, t, dst)
		}
		dst.Set(v)
		return nil
	}
	if t.kind == kNullable {
		if v.IsNil() {
			if dst.Kind() != reflect.Pointer && dst.CanAddr() && dst.Addr().Type().Implements(scannerType) {
				return dst.Addr().Interface().(sql.Scanner).Scan(nil)
			}
			dst.SetZero() // nil for a pointer, the zero value otherwise
			return nil
		}
		if dst.Kind() == reflect.Pointer {
			p := reflect.New(dst.Type().Elem())
			if err := assign(p.Elem(), v.Elem(), t.elem); err != nil {
				return err
			}
			dst.Set(p)
			return nil
		}
		return assign(dst, v.Elem(), t.elem)
	}
	if v.Type().AssignableTo(dst.Type()) {
		if t.kind == kArray {
			// A copy, as the element assignments below would make.
			dst.Set(reflect.AppendSlice(reflect.MakeSlice(dst.Type(), 0, v.Len()), v))
			return nil
		}
		dst.Set(v)
		return nil
	}
	if dst.CanAddr() && dst.Addr().Type().Implements(scannerType) {
		return dst.Addr().Interface().(sql.Scanner).Scan(driverValue(v, t))
	}
	if dst.Kind() == reflect.Pointer && dst.Type() != typeBigInt {
		p := reflect.New(dst.Type().Elem())
		if err := assign(p.Elem(), v, t); err != nil {
			return err
		}
		dst.Set(p)
		return nil
	}
	if t.kind == kArray {
		if dst.Kind() != reflect.Slice {
			return cannot(v, t, dst)
		}
		out := reflect.MakeSlice(dst.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			if err := assign(out.Index(i), v.Index(i), t.elem); err != nil {
				return err
			}
		}
		dst.Set(out)
		return nil
	}
	switch dst.Kind() {
	case reflect.String:
		dst.SetString(text(v, t))
		return nil
	case reflect.Slice:
		if dst.Type().Elem().Kind() == reflect.Uint8 && v.Kind() == reflect.String {
			dst.SetBytes([]byte(v.String()))
			return nil
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n, ok := asInt(v, t); ok {
			dst.SetInt(n)
			return nil
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if n, ok := asInt(v, t); ok {
			dst.SetUint(uint64(n))
			return nil
		}
	case reflect.Float32, reflect.Float64:
		switch v.Kind() {
		case reflect.Float32, reflect.Float64:
			dst.SetFloat(v.Float())
			return nil
		}
		if n, ok := asInt(v, t); ok {
			if v.Kind() == reflect.Uint64 {
				dst.SetFloat(float64(v.Uint()))
			} else {
				dst.SetFloat(float64(n))
			}
			return nil
		}
	case reflect.Bool:
		if v.Kind() == reflect.Bool {
			dst.SetBool(v.Bool())
			return nil
		}
		if n, ok := asInt(v, t); ok {
			dst.SetBool(n != 0)
			return nil
		}
	}
	return cannot(v, t, dst)
}

func cannot(v reflect.Value, t *colType, dst reflect.Value) error {
	return fmt.Errorf("chdb: cannot scan %s (Go %s) into %s", t.name, v.Type(), dst.Type())
}

// asInt is v as an int64 (the bits of a uint64) when v is an integer, a
// bool or an Enum (its number).
func asInt(v reflect.Value, t *colType) (int64, bool) {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int(), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return int64(v.Uint()), true
	case reflect.Bool:
		if v.Bool() {
			return 1, true
		}
		return 0, true
	case reflect.String:
		if t.kind == kEnum8 || t.kind == kEnum16 {
			n, ok := t.enum[v.String()]
			return n, ok
		}
	}
	return 0, false
}

// text is v as ClickHouse writes it as text (toString).
func text(v reflect.Value, t *colType) string {
	switch x := v.Interface().(type) {
	case string:
		return x
	case time.Time:
		return t.timeText(x)
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case *big.Int:
		return x.String()
	}
	return fmt.Sprint(v.Interface())
}

// driverValue is v as a database/sql driver value for a sql.Scanner: nil
// for NULL, int64 for the integers (uint64 above MaxInt64 as it is),
// float64, bool, string, time.Time; other types as they are.
func driverValue(v reflect.Value, t *colType) any {
	if !v.IsValid() {
		return nil
	}
	if t.kind == kNullable {
		if v.IsNil() {
			return nil
		}
		return driverValue(v.Elem(), t.elem)
	}
	switch v.Kind() {
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int()
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if u := v.Uint(); u <= 1<<63-1 {
			return int64(u)
		}
	case reflect.Float32, reflect.Float64:
		return v.Float()
	}
	switch x := v.Interface().(type) {
	case uuid.UUID:
		return x.String()
	case *big.Int:
		return x.String()
	}
	return v.Interface()
}

// structFields maps column names to the fields of the struct type st: a
// field's name is its `ch` tag, else its Go name (exported fields only; "-"
// skips a field), as clickhouse-go maps them.
func structFields(st reflect.Type) map[string][]int {
	out := map[string][]int{}
	for i := range st.NumField() {
		f := st.Field(i)
		if !f.IsExported() {
			continue
		}
		name := f.Name
		if tag := f.Tag.Get("ch"); tag != "" {
			name = tag
		}
		if name == "-" {
			continue
		}
		out[name] = f.Index
	}
	return out
}

// structTargets returns pointers to the fields of *s (a pointer to a
// struct) for the columns (ptr), or the fields' values (!ptr).
func structTargets(op string, columns []string, s any, ptr bool) ([]any, error) {
	v := reflect.ValueOf(s)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("chdb: %s needs a non-nil pointer to a struct, not %T", op, s)
	}
	v = v.Elem()
	fields := structFields(v.Type())
	out := make([]any, len(columns))
	for i, c := range columns {
		idx, ok := fields[c]
		if !ok {
			return nil, fmt.Errorf("chdb: %s: missing destination name %q in %T", op, c, s)
		}
		f := v.FieldByIndex(idx)
		if ptr {
			out[i] = f.Addr().Interface()
		} else {
			out[i] = f.Interface()
		}
	}
	return out, nil
}
