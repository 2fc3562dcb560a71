package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/domain/conversion"
	"github.com/linkd/linkd/domain/link"
	"github.com/linkd/linkd/domain/webhook"
	"github.com/linkd/linkd/eventstore"
)

// matched is an event that some webhooks want, with the body they get.
type matched struct {
	eventType string
	body      []byte
	hooks     []*hook
}

// match finds the webhooks of byWS that want re and builds its body once.
// live keeps only the webhooks created before the event (a replay asks
// for one webhook, whatever its creation).
// decode is re's domain event (the pipeline's, decoded once per process,
// when the event comes from it).
func (s *Store) match(ctx context.Context, re *eventstore.RecordedEvent, decode func() (domain.Event, error), byWS map[string][]*hook, live bool) (*matched, error) {
	e, err := decode()
	if errors.Is(err, domain.ErrUnknownEvent) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	pick := func(workspaceID, eventType, linkID string) []*hook {
		var out []*hook
		for _, h := range byWS[workspaceID] {
			if h.wants(eventType, linkID) && (!live || h.Created.Less(re.Position)) {
				out = append(out, h)
			}
		}
		return out
	}
	var (
		typ   string
		hooks []*hook
		data  map[string]any
	)
	switch e := e.(type) {
	case *link.Created, *link.Updated, *link.Archived, *link.Unarchived, *link.Deleted:
		typ = webhook.TypeLinkUpdated
		switch e.(type) {
		case *link.Created:
			typ = webhook.TypeLinkCreated
		case *link.Deleted:
			typ = webhook.TypeLinkDeleted
		}
		id := strings.TrimPrefix(re.Stream, "link-")
		s.links.forget(id)
		l, err := s.linkAt(ctx, re.Stream, re.Version)
		if err != nil {
			return nil, err
		}
		if hooks = pick(l.WorkspaceID, typ, l.ID); len(hooks) == 0 {
			return nil, nil
		}
		clicks, err := s.clickCount(ctx, l.ID)
		if err != nil {
			return nil, err
		}
		lj, err := s.opts.RenderLink(ctx, l, clicks)
		if err != nil {
			return nil, err
		}
		data = map[string]any{"link": lj}
	case *click.Recorded:
		typ = webhook.TypeLinkClicked
		if hooks = pick(e.WorkspaceID, typ, e.LinkID); len(hooks) == 0 {
			return nil, nil
		}
		// Clicks are most events: their body is put together from the
		// link's JSON, encoded once per link, and the click's.
		body, err := s.clickBody(ctx, e, int64(re.Version)+1, re.Time)
		if err != nil {
			return nil, err
		}
		return &matched{eventType: typ, body: body, hooks: hooks}, nil
	case *conversion.LeadTracked:
		typ = webhook.TypeLeadCreated
		if hooks = pick(e.WorkspaceID, typ, e.LinkID); len(hooks) == 0 {
			return nil, nil
		}
		if data, err = s.conversionData(ctx, re, e.EventName, e.Click); err != nil {
			return nil, err
		}
	case *conversion.SaleTracked:
		typ = webhook.TypeSaleCreated
		if hooks = pick(e.WorkspaceID, typ, e.LinkID); len(hooks) == 0 {
			return nil, nil
		}
		if data, err = s.conversionData(ctx, re, e.EventName, e.Click); err != nil {
			return nil, err
		}
		meta := any(nil)
		if len(e.Metadata) > 0 {
			meta = json.RawMessage(e.Metadata)
		}
		var eventID any
		if e.EventID != "" {
			eventID = e.EventID
		}
		data["sale"] = map[string]any{
			"amount": json.Number(conversion.FormatAmount(e.AmountMinor, e.Currency)), "currency": e.Currency,
			"event_id": eventID, "metadata": meta,
		}
	default:
		return nil, nil
	}
	body, err := json.Marshal(map[string]any{"type": typ, "timestamp": formatTime(re.Time), "data": data})
	if err != nil {
		return nil, err
	}
	return &matched{eventType: typ, body: body, hooks: hooks}, nil
}

// linkAt is a link as its event at version left it.
func (s *Store) linkAt(ctx context.Context, stream string, version uint64) (*link.Link, error) {
	recs, err := s.opts.Events.ReadStream(ctx, stream, 0, int(version)+1)
	if err != nil {
		return nil, err
	}
	events := make([]domain.Event, 0, len(recs))
	for _, r := range recs {
		e, err := domain.DecodeEvent(r.Type, r.Data)
		if err != nil {
			return nil, err
		}
		events = append(events, e)
	}
	return link.Load(events)
}

// clickCount is the number of clicks a link has now.
func (s *Store) clickCount(ctx context.Context, linkID string) (int64, error) {
	v, ok, err := s.opts.Events.StreamVersion(ctx, "clicks-"+linkID)
	if err != nil || !ok {
		return 0, err
	}
	return int64(v) + 1, nil
}

// linkJSON is a link as it is now, with clicks clicks (zero: its count
// now). Links are rendered once and kept until they change.
func (s *Store) linkJSON(ctx context.Context, linkID string, clicks int64) (map[string]any, error) {
	m, ok := s.links.get(linkID)
	if !ok {
		v, found, err := s.opts.Events.StreamVersion(ctx, "link-"+linkID)
		if err != nil {
			return nil, err
		}
		if !found {
			return map[string]any{"id": linkID}, nil
		}
		l, err := s.linkAt(ctx, "link-"+linkID, v)
		if err != nil {
			return nil, err
		}
		n, err := s.clickCount(ctx, linkID)
		if err != nil {
			return nil, err
		}
		if m, err = s.opts.RenderLink(ctx, l, n); err != nil {
			return nil, err
		}
		s.links.put(linkID, m)
	}
	if clicks == 0 {
		return m, nil
	}
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	c["clicks"], c["click_count"] = clicks, clicks
	return c, nil
}

// clickData is the click of link.clicked.
type clickData struct {
	ID         string  `json:"id"`
	Timestamp  string  `json:"timestamp"`
	LinkID     string  `json:"link_id"`
	URL        string  `json:"url"`
	Country    string  `json:"country"`
	City       string  `json:"city"`
	Continent  string  `json:"continent"`
	Device     string  `json:"device"`
	Browser    string  `json:"browser"`
	OS         string  `json:"os"`
	Referrer   string  `json:"referrer"`
	QR         bool    `json:"qr"`
	TrackingID *string `json:"tracking_id"`
}

func clickOf(e *click.Recorded) clickData {
	device := e.DeviceType
	if device == "" {
		device = e.Device
	}
	c := clickData{ID: e.ClickID, Timestamp: formatTime(e.Timestamp), LinkID: e.LinkID, URL: e.Destination,
		Country: e.Country, City: e.City, Continent: e.Continent, Device: device, Browser: e.Browser,
		OS: e.OS, Referrer: e.Referrer, QR: e.QR}
	if e.TrackingID != "" {
		c.TrackingID = &e.TrackingID
	}
	return c
}

// clickBody is the body of link.clicked: the envelope, the click, and the
// link with clicks clicks.
func (s *Store) clickBody(ctx context.Context, e *click.Recorded, clicks int64, at time.Time) ([]byte, error) {
	lb, err := s.linkBytes(ctx, e.LinkID)
	if err != nil {
		return nil, err
	}
	cb, err := json.Marshal(clickOf(e))
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(lb)+len(cb)+160)
	b = append(b, `{"data":{"click":`...)
	b = append(b, cb...)
	b = append(b, `,"link":`...)
	b = append(b, lb[:len(lb)-1]...) // without its closing brace
	if len(lb) > 2 {
		b = append(b, ',')
	}
	b = append(b, `"click_count":`...)
	b = strconv.AppendInt(b, clicks, 10)
	b = append(b, `,"clicks":`...)
	b = strconv.AppendInt(b, clicks, 10)
	b = append(b, `}},"timestamp":"`...)
	b = append(b, formatTime(at)...)
	b = append(b, `","type":"link.clicked"}`...)
	return b, nil
}

// linkBytes is a link's JSON without its click counts, encoded once per
// link and kept until the link changes.
func (s *Store) linkBytes(ctx context.Context, linkID string) ([]byte, error) {
	if b, ok := s.links.getBytes(linkID); ok {
		return b, nil
	}
	m, err := s.linkJSON(ctx, linkID, 0)
	if err != nil {
		return nil, err
	}
	c := make(map[string]any, len(m))
	for k, v := range m {
		if k != "clicks" && k != "click_count" {
			c[k] = v
		}
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	s.links.putBytes(linkID, b)
	return b, nil
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// conversionData is the data of lead.created and sale.created: the event
// name, the customer as the event left it, its click and link.
func (s *Store) conversionData(ctx context.Context, re *eventstore.RecordedEvent, eventName string, c conversion.Click) (map[string]any, error) {
	recs, err := s.opts.Events.ReadStream(ctx, re.Stream, 0, int(re.Version)+1)
	if err != nil {
		return nil, err
	}
	var ext string
	var p conversion.Profile
	merge := func(q conversion.Profile) {
		for _, f := range [...]struct {
			dst *string
			v   string
		}{
			{&p.Email, q.Email}, {&p.Firstname, q.Firstname}, {&p.Lastname, q.Lastname}, {&p.PhoneNumber, q.PhoneNumber}, {&p.AvatarURL, q.AvatarURL},
		} {
			if f.v != "" {
				*f.dst = f.v
			}
		}
	}
	for _, r := range recs {
		if r.Type != conversion.EventCustomerCreated && r.Type != conversion.EventCustomerUpdated {
			continue
		}
		e, err := domain.DecodeEvent(r.Type, r.Data)
		if err != nil {
			return nil, err
		}
		switch e := e.(type) {
		case *conversion.CustomerCreated:
			ext = e.ExternalID
			merge(e.Profile)
		case *conversion.CustomerUpdated:
			merge(e.Profile)
		}
	}
	lj, err := s.linkJSON(ctx, c.LinkID, 0)
	if err != nil {
		return nil, err
	}
	ck, err := s.conversionClick(ctx, c)
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"event_name": eventName,
		"customer": map[string]any{
			"externalId": ext, "email": nullable(p.Email), "firstname": nullable(p.Firstname), "lastname": nullable(p.Lastname),
			"phoneNumber": nullable(p.PhoneNumber), "avatarUrl": nullable(p.AvatarURL),
		},
		"click": ck,
		"link":  lj,
	}, nil
}

// conversionClick is the click of lead.created and sale.created: the
// fields of link.clicked's click. The conversion keeps the click's place
// in its stream (Seq), where the click is read for the fields the
// conversion does not keep (its destination, city and continent), here
// rather than on the conversion's path. Its tracking id is its id (the
// svc_tid a redirect hands out). Conversions recorded before linkd kept
// the place have null there.
func (s *Store) conversionClick(ctx context.Context, c conversion.Click) (map[string]any, error) {
	m := map[string]any{
		"id": c.ClickID, "timestamp": formatTime(c.ClickedAt), "link_id": c.LinkID, "url": nil, "country": c.Country,
		"city": nil, "continent": nil, "device": c.DeviceType, "browser": c.Browser, "os": c.OS, "referrer": c.Referrer,
		"qr": nil, "tracking_id": c.ClickID,
	}
	if c.Seq == 0 {
		return m, nil
	}
	recs, err := s.opts.Events.ReadStream(ctx, click.Stream(c.LinkID), c.Seq-1, 1)
	if err != nil {
		return nil, err
	}
	if len(recs) != 1 || recs[0].Type != click.EventRecorded {
		return m, nil
	}
	e, err := domain.DecodeEvent(recs[0].Type, recs[0].Data)
	if r, ok := e.(*click.Recorded); err == nil && ok && r.ClickID == c.ClickID {
		m["url"], m["city"], m["continent"], m["qr"] = r.Destination, r.City, r.Continent, r.QR
	}
	return m, nil
}

func formatTime(t time.Time) string {
	t = t.UTC().Truncate(time.Microsecond)
	if t.Nanosecond() == 0 {
		return t.Format("2006-01-02T15:04:05Z")
	}
	return t.Format("2006-01-02T15:04:05.000000Z")
}

// linkCache keeps rendered links, forgotten when they change.
type linkCache struct {
	mu  sync.Mutex
	max int
	m   map[string]map[string]any
	b   map[string][]byte
}

func newLinkCache(max int) *linkCache {
	return &linkCache{max: max, m: map[string]map[string]any{}, b: map[string][]byte{}}
}

func (c *linkCache) getBytes(id string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.b[id]
	return b, ok
}

func (c *linkCache) putBytes(id string, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.b) >= c.max {
		clear(c.b)
	}
	c.b[id] = b
}

func (c *linkCache) get(id string) (map[string]any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.m[id]
	return m, ok
}

func (c *linkCache) put(id string, m map[string]any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		clear(c.m)
	}
	c.m[id] = m
}

func (c *linkCache) forget(id string) {
	c.mu.Lock()
	delete(c.m, id)
	delete(c.b, id)
	c.mu.Unlock()
}
