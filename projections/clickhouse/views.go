package clickhouse

import (
	"fmt"
	"regexp"
	"strings"
)

// View is a materialized view of the schema, as the migrations leave it:
// with every INSERT into Source it writes, into Target, its SELECT over the
// rows inserted. A projection whose INSERT reached Source but not Target (a
// crash between the two) rebuilds what is missing with Refill.
type View struct {
	Name, Target, Source string
	// The SELECT ({db} not replaced) before and after the name of Source
	// in its FROM clause.
	head, tail string
	cols       []string // the columns of Target it writes
}

var (
	viewFromRe   = regexp.MustCompile(`(?is)^SELECT\s+(.+?)\s+FROM\s+\{db\}\.(\w+)`)
	viewAliasRe  = regexp.MustCompile(`(?is)\sAS\s+(\S+)$`)
	identifierRe = regexp.MustCompile(`^\w+$`)
)

// parseView parses the SELECT of a view into target.
func parseView(name, target, sel string) (View, error) {
	m := viewFromRe.FindStringSubmatchIndex(sel)
	if m == nil {
		return View{}, fmt.Errorf("view %s: its SELECT reads FROM {db}.<table>", name)
	}
	v := View{Name: name, Target: target, Source: sel[m[4]:m[5]], head: sel[:m[4]-len("{db}.")], tail: sel[m[5]:]}
	for _, field := range splitTopLevel(sel[m[2]:m[3]]) {
		col := field
		if a := viewAliasRe.FindStringSubmatch(field); a != nil {
			col = strings.Trim(a[1], "`")
		} else if !identifierRe.MatchString(field) {
			return View{}, fmt.Errorf("view %s: %q needs a name (AS <column of %s>)", name, field, target)
		}
		v.cols = append(v.cols, col)
	}
	return v, nil
}

// MustView is the view name as the migrations leave it. It panics when the
// embedded migrations do not parse or leave no such view: the names are the
// projections' constants, which their tests check.
func MustView(name string) View {
	ms, err := embedded()
	if err != nil {
		panic("clickhouse: " + err.Error())
	}
	var (
		v     View
		found bool
	)
	for _, m := range ms {
		for _, s := range m.statements {
			switch {
			case s.name != name:
			case s.kind == createView:
				v, found = s.view, true
			case s.kind == dropTable:
				found = false
			}
		}
	}
	if !found {
		panic("clickhouse: the migrations leave no view " + name)
	}
	return v
}

// Refill is the INSERT that writes into v's target what v writes for the
// rows of table from (Source, or a table with its columns) that match where:
// v's own SELECT, over those rows.
func (db *DB) Refill(v View, from, where string) string {
	src := "(SELECT * FROM {db}." + from + " WHERE " + where + ")"
	return db.render("INSERT INTO {db}." + v.Target + " (" + Columns(v.cols...) + ") " + v.head + src + v.tail)
}
