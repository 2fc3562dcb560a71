// Package clickindex is the click-id index: the durable, on-disk read model
// that maps a tracking id (the svc_tid a redirect hands out) to its click,
// so that a lead or a sale naming it can be attributed and segmented.
//
// It consumes the "clicks" category. Every ClickRecorded with a tracking_id
// (a link with conversion tracking on; clicks without one are skipped)
// becomes one record in a Pebble database: link, workspace, project and
// domain ids, the click's time and the tracking id's expiry, country,
// device type, browser, OS, referrer and the QR flag (record.go), about 120
// bytes before compression.
//
// # Reads
//
// Click(ctx, trackingID) is one point read (keys.go tells how a tracking id
// maps to its key) served through bloom filters, the block cache and the
// operating system's page cache. An id whose expiry is not after
// Options.Now() is not found, whether or not Expire has deleted it yet.
// Click shows what Apply has committed: the API waits for the projection's
// watermark before asking, so that a lead sent right after its redirect
// finds the click.
//
// # Writes and idempotence
//
// Apply writes, in one atomic Pebble batch, the records of the batch's new
// tracked clicks, the last version applied of every click stream it touched
// and the checkpoint. An event is applied only when its version is newer
// than the last version applied of its stream (kept in the database, cached
// in memory), so duplicates in one batch, in later batches and after a
// restart are skipped, and streams may interleave in any order. A record is
// a blind Set: Apply never reads one. Clicks already expired when applied
// (a replay of old history) are not written.
//
// Fed in log order (the in-process runner: WriteVersionsBehind), the stream
// versions are written about once a second and at Close rather than with
// every batch, as in projections/analytics (internal/storage/versioncache, Behind).
//
// # Expiry
//
// Tracking ids expire 90 days after their click (click.TrackingTTL, or the
// click's tracking_expires_at). Expire, run by a background goroutine every
// Options.ExpireEvery, deletes them: the UUIDv7 ids linkd hands out sort by
// their creation time, so they go by one DeleteRange over the front of
// their key range; any other id has a second key ordered by its expiry day
// that names it (expire.go).
//
// # Memory
//
// Bounded by Options, whatever the number of ids: Pebble's block cache
// (CacheSize), its memtables (MemTableSize, two at most), the stream-version
// cache (StreamCacheSize entries, twice at most), Pebble's table cache
// (its default of 1,000 open files) and per Apply the batch being applied.
// docs/clickindex.md has the measurements.
package clickindex
