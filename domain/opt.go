package domain

import (
	"bytes"
	"encoding/json"
)

// Opt is a field of a partial update. Absent means "leave as is"; present
// with JSON null means "clear"; present with a value means "set". Use it with
// the `omitzero` JSON option so that absent fields stay absent on the wire.
type Opt[T any] struct {
	Set  bool // the field was given
	Null bool // it was given as null
	V    T
}

// Some returns a set Opt holding v.
func Some[T any](v T) Opt[T] { return Opt[T]{Set: true, V: v} }

// Null returns a set Opt holding null.
func NullOpt[T any]() Opt[T] { return Opt[T]{Set: true, Null: true} }

// IsZero reports whether the field is absent (for `omitzero`).
func (o Opt[T]) IsZero() bool { return !o.Set }

// Value returns the held value and whether the field sets a non-null value.
func (o Opt[T]) Value() (T, bool) { return o.V, o.Set && !o.Null }

func (o Opt[T]) MarshalJSON() ([]byte, error) {
	if !o.Set || o.Null {
		return []byte("null"), nil
	}
	return json.Marshal(o.V)
}

func (o *Opt[T]) UnmarshalJSON(b []byte) error {
	o.Set = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		o.Null = true
		var zero T
		o.V = zero
		return nil
	}
	o.Null = false
	return json.Unmarshal(b, &o.V)
}

// Normalize passes a given field through normalize, as an update checks
// it: absent stays absent; null goes through as the zero value, so that a
// normalizer that refuses the zero value makes the field one that cannot
// be cleared, and one that takes it clears the field. The result holds
// what normalize returned.
func (o Opt[T]) Normalize(normalize func(T) (T, error)) (Opt[T], error) {
	if !o.Set {
		return o, nil
	}
	var v T
	if !o.Null {
		v = o.V
	}
	v, err := normalize(v)
	if err != nil {
		return Opt[T]{}, err
	}
	return Some(v), nil
}

// Ptr returns a pointer to the value, nil when absent or null.
func (o Opt[T]) Ptr() *T {
	if !o.Set || o.Null {
		return nil
	}
	v := o.V
	return &v
}
