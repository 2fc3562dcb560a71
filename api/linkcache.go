package api

import (
	"context"
	"sync"

	"github.com/linkd/linkd/projections/core"
	"github.com/linkd/linkd/queries"
)

// LinkSource is what the link cache reads: links by code, verified
// domains by name (the core projection).
type LinkSource interface {
	LinkByCode(ctx context.Context, domainID, code string) (queries.Link, bool, error)
	VerifiedDomain(ctx context.Context, name string) (queries.Domain, bool, error)
}

// LinkCache keeps the links that short URLs follow, and the hosts of
// custom domains, in memory: it is the LinkAccess query's read model. The
// core projection invalidates it after each applied batch.
type LinkCache struct {
	src  LinkSource
	size int

	mu      sync.RWMutex
	links   map[cacheKey]*queries.Link
	byID    map[string]cacheKey // link id -> cache key
	domains map[string]string   // host -> domain id ("" for none)
	// users are the cached links that name each UTM template or pixel
	// (kind + "/" + id -> link ids): they hold its values, resolved when
	// they were read, and are forgotten when it changes.
	users map[string]map[string]struct{}
	// gen counts the invalidations that forget links (not click counts,
	// keys or projects): a link read before one is not cached.
	gen uint64
}

// NewLinkCache builds a cache of at most size links (default 100,000).
func NewLinkCache(src LinkSource, size int) *LinkCache {
	if size <= 0 {
		size = 100_000
	}
	return &LinkCache{src: src, size: size, links: map[cacheKey]*queries.Link{}, byID: map[string]cacheKey{}, domains: map[string]string{},
		users: map[string]map[string]struct{}{}}
}

var _ queries.LinkAccessReadModel = (*LinkCache)(nil)

// Invalidate forgets cached links (by id) and, for domain changes, the
// host table.
func (c *LinkCache) Invalidate(kind, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch kind {
	case "link":
		c.gen++
		c.forget(id)
	case core.KindUTMTemplate, core.KindPixel:
		c.gen++
		for linkID := range c.users[kind+"/"+id] {
			c.forget(linkID)
		}
		delete(c.users, kind+"/"+id)
	case "domain", "workspace", "reset":
		c.gen++
		c.links = map[cacheKey]*queries.Link{}
		c.byID = map[string]cacheKey{}
		c.domains = map[string]string{}
		c.users = map[string]map[string]struct{}{}
	}
}

// forget drops a cached link (the caller holds mu). Its entries in users
// stay until their template or pixel changes: forgetting an id twice is
// harmless.
func (c *LinkCache) forget(linkID string) {
	if key, ok := c.byID[linkID]; ok {
		delete(c.links, key)
		delete(c.byID, linkID)
	}
}

// used records that a cached link resolved its template and pixel (the
// caller holds mu).
func (c *LinkCache) used(l *queries.Link) {
	add := func(kind, id string) {
		set := c.users[kind+"/"+id]
		if set == nil {
			set = map[string]struct{}{}
			c.users[kind+"/"+id] = set
		}
		set[l.ID] = struct{}{}
	}
	if l.UTMTemplateID != "" {
		add(core.KindUTMTemplate, l.UTMTemplateID)
	}
	if l.PixelID != nil && *l.PixelID != "" {
		add(core.KindPixel, *l.PixelID)
	}
}

// LinkLister reads many links at once (core.Store.LinksToFollow): those of
// ids, or with ids nil the n most recently created.
type LinkLister interface {
	LinksToFollow(ctx context.Context, ids []string, n int) ([]queries.Link, error)
}

// fillChunk bounds the ids of one read of Refresh.
const fillChunk = 500

// Warm fills the cache with the most recently created links, as many as
// it has room for, in one read: after a start, a link's first redirect then finds
// it cached rather than waiting for a query of its own (about 200 µs each,
// which with 10,000 links clicked made the first seconds of load slow).
// Without a LinkLister source it does nothing.
func (c *LinkCache) Warm(ctx context.Context) error {
	src, ok := c.src.(LinkLister)
	if !ok {
		return nil
	}
	room, gen := c.room()
	if room <= 0 { // filled already (Refresh while the projector caught up)
		return nil
	}
	links, err := src.LinksToFollow(ctx, nil, room)
	if err != nil {
		return err
	}
	c.fill(links, gen)
	return nil
}

// Refresh reads the links of ids into the cache while it has room, so that
// a link just created or changed is cached before its first redirect. Call
// it after Invalidate of the same changes, from the goroutine that applies
// them (the core projector's OnChange): no later change can then be applied
// during the read.
func (c *LinkCache) Refresh(ctx context.Context, ids []string) error {
	src, ok := c.src.(LinkLister)
	if !ok {
		return nil
	}
	for len(ids) > 0 {
		room, gen := c.room()
		if room <= 0 {
			return nil
		}
		chunk := ids[:min(len(ids), fillChunk, room)]
		ids = ids[len(chunk):]
		links, err := src.LinksToFollow(ctx, chunk, len(chunk))
		if err != nil {
			return err
		}
		c.fill(links, gen)
	}
	return nil
}

// room is how many more links the cache holds, and its generation.
func (c *LinkCache) room() (int, uint64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.size - len(c.links), c.gen
}

// cacheKey is a link's key in links: its domain id ("" for the default
// domain) and its code, as they are (a string made of both cost an
// allocation per redirect).
type cacheKey struct{ domainID, code string }

// put caches l under key, forgetting an older key of the same link (the
// caller holds mu). Its routes are worked out already (PrepareRoutes),
// before taking mu.
func (c *LinkCache) put(key cacheKey, l *queries.Link) {
	if old, ok := c.byID[l.ID]; ok && old != key {
		delete(c.links, old)
	}
	c.links[key] = l
	c.byID[l.ID] = key
	c.used(l)
}

// fill caches links read when the cache was at generation gen, up to its
// size; none if an invalidation came in between (what was read may
// predate it).
func (c *LinkCache) fill(links []queries.Link, gen uint64) {
	for i := range links {
		links[i].PrepareRoutes()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	for i := range links {
		l := &links[i]
		domainID := ""
		if l.DomainID != nil {
			domainID = *l.DomainID
		}
		key := cacheKey{domainID, l.Code}
		if _, ok := c.links[key]; !ok && len(c.links) >= c.size {
			return
		}
		c.put(key, l)
	}
}

// VerifiedDomainID implements queries.LinkAccessReadModel.
func (c *LinkCache) VerifiedDomainID(ctx context.Context, host string) (string, bool, error) {
	c.mu.RLock()
	id, ok := c.domains[host]
	c.mu.RUnlock()
	if ok {
		return id, id != "", nil
	}
	d, found, err := c.src.VerifiedDomain(ctx, host)
	if err != nil {
		return "", false, err
	}
	if found {
		id = d.ID
	}
	c.mu.Lock()
	if len(c.domains) > 10_000 {
		c.domains = map[string]string{}
	}
	c.domains[host] = id
	c.mu.Unlock()
	return id, found, nil
}

// LinkByCode implements queries.LinkAccessReadModel.
func (c *LinkCache) LinkByCode(ctx context.Context, domainID, code string) (*queries.Link, error) {
	key := cacheKey{domainID, code}
	c.mu.RLock()
	l, ok := c.links[key]
	gen := c.gen
	c.mu.RUnlock()
	if ok {
		return l, nil
	}
	v, found, err := c.src.LinkByCode(ctx, domainID, code)
	if err != nil || !found {
		return nil, err
	}
	v.PrepareRoutes()
	c.mu.Lock()
	if c.gen == gen { // else what was read may predate a change: not kept
		if len(c.links) >= c.size {
			c.links = map[cacheKey]*queries.Link{}
			c.byID = map[string]cacheKey{}
			c.users = map[string]map[string]struct{}{}
		}
		c.put(key, &v)
	}
	c.mu.Unlock()
	return &v, nil
}
