package api

import (
	"context"
	"sync"

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
	links   map[string]*queries.Link // domainID + "/" + code
	byID    map[string]string        // link id -> cache key
	domains map[string]string        // host -> domain id ("" for none)
}

// NewLinkCache builds a cache of at most size links (default 100,000).
func NewLinkCache(src LinkSource, size int) *LinkCache {
	if size <= 0 {
		size = 100_000
	}
	return &LinkCache{src: src, size: size, links: map[string]*queries.Link{}, byID: map[string]string{}, domains: map[string]string{}}
}

var _ queries.LinkAccessReadModel = (*LinkCache)(nil)

// Invalidate forgets cached links (by id) and, for domain changes, the
// host table.
func (c *LinkCache) Invalidate(kind, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch kind {
	case "link":
		if key, ok := c.byID[id]; ok {
			delete(c.links, key)
			delete(c.byID, id)
		}
	case "domain", "workspace", "reset":
		c.links = map[string]*queries.Link{}
		c.byID = map[string]string{}
		c.domains = map[string]string{}
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
	key := domainID + "/" + code
	c.mu.RLock()
	l, ok := c.links[key]
	c.mu.RUnlock()
	if ok {
		return l, nil
	}
	v, found, err := c.src.LinkByCode(ctx, domainID, code)
	if err != nil || !found {
		return nil, err
	}
	c.mu.Lock()
	if len(c.links) >= c.size {
		c.links = map[string]*queries.Link{}
		c.byID = map[string]string{}
	}
	c.links[key] = &v
	c.byID[v.ID] = key
	c.mu.Unlock()
	return &v, nil
}
