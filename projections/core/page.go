package core

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"math"
	"strings"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/queries"
)

// cursor marks a place in a list ordered by (created_at, id): the item it
// was made from, which way to go, and the page number it leads to.
type cursor struct {
	T    int64  `json:"t"`
	ID   string `json:"i"`
	Dir  string `json:"d"` // "n" after, "p" before
	Page int    `json:"p"`
}

func (c cursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// ErrBadCursor is returned for a cursor that this server did not make.
var ErrBadCursor = domain.Invalid("Invalid cursor")

func decodeCursor(s string) (cursor, error) {
	var c cursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, &c) != nil || (c.Dir != "n" && c.Dir != "p") || c.ID == "" {
		return c, ErrBadCursor
	}
	if c.Page < 1 {
		c.Page = 1
	}
	return c, nil
}

type keyed[T any] struct {
	item T
	t    int64
	id   string
}

// paginate runs "SELECT cols FROM ... WHERE where" ordered by (created_at,
// id), one page of it. cols must end with created_at and id, which scan
// reads along with the item.
func paginate[T any](ctx context.Context, db *sql.DB, selectFrom, where string, args []any, asc bool, p queries.Page,
	scan func(*sql.Rows) (T, int64, string, error)) (queries.PageResult[T], error) {
	size := p.PageSize
	if size <= 0 {
		size = 10
	}
	res := queries.PageResult[T]{PageSize: size, Page: p.Page, Items: []T{}}
	if res.Page < 1 {
		res.Page = 1
	}
	forward := true
	var q strings.Builder
	q.WriteString(selectFrom)
	q.WriteString(" WHERE ")
	q.WriteString(where)
	args = append([]any{}, args...)
	offset := 0
	if p.Cursor != "" {
		c, err := decodeCursor(p.Cursor)
		if err != nil {
			return res, err
		}
		res.Page = c.Page
		forward = c.Dir == "n"
		// Going forward in an ascending list means "greater than".
		greater := forward == asc
		if greater {
			q.WriteString(" AND (created_at, id) > (?, ?)")
		} else {
			q.WriteString(" AND (created_at, id) < (?, ?)")
		}
		args = append(args, c.T, c.ID)
	} else {
		offset = pageOffset(res.Page, size)
	}
	ascending := asc == forward
	if ascending {
		q.WriteString(" ORDER BY created_at ASC, id ASC")
	} else {
		q.WriteString(" ORDER BY created_at DESC, id DESC")
	}
	q.WriteString(" LIMIT ? OFFSET ?")
	args = append(args, size+1, offset)
	rows, err := db.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return res, err
	}
	defer rows.Close()
	var items []keyed[T]
	for rows.Next() {
		it, t, id, err := scan(rows)
		if err != nil {
			return res, err
		}
		items = append(items, keyed[T]{it, t, id})
	}
	if err := rows.Err(); err != nil {
		return res, err
	}
	more := len(items) > size
	if more {
		items = items[:size]
	}
	if !forward {
		for i, j := 0, len(items)-1; i < j; i, j = i+1, j-1 {
			items[i], items[j] = items[j], items[i]
		}
	}
	if p.Cursor == "" {
		res.HasNext, res.HasPrev = more, res.Page > 1
	} else if forward {
		res.HasNext, res.HasPrev = more, true
	} else {
		res.HasNext, res.HasPrev = true, more
		if !more {
			res.Page = 1
		}
	}
	for _, it := range items {
		res.Items = append(res.Items, it.item)
	}
	if len(items) > 0 {
		first, last := items[0], items[len(items)-1]
		if res.HasNext {
			res.NextCursor = cursor{T: last.t, ID: last.id, Dir: "n", Page: res.Page + 1}.encode()
		}
		if res.HasPrev {
			prevPage := res.Page - 1
			if prevPage < 1 {
				prevPage = 1
			}
			res.PrevCursor = cursor{T: first.t, ID: first.id, Dir: "p", Page: prevPage}.encode()
		}
	} else if res.HasPrev && p.Cursor == "" {
		res.HasPrev = res.Page > 1
	}
	return res, nil
}

// pageOffset is the number of items before page number page. A page so far
// out that the product overflows is past the end of any list: the largest
// offset, never a wrapped-around one that would show the first items.
func pageOffset(page, size int) int {
	if page-1 > math.MaxInt64/size {
		return math.MaxInt64
	}
	return (page - 1) * size
}

// inList returns "(?, ?, ...)" and the args for values.
func inList(values []string) (string, []any) {
	if len(values) == 0 {
		return "(NULL)", nil
	}
	args := make([]any, len(values))
	for i, v := range values {
		args[i] = v
	}
	return "(" + strings.TrimSuffix(strings.Repeat("?, ", len(values)), ", ") + ")", args
}
