// Package domain holds what every aggregate shares: the Event interface and
// the registry of wire names, typed errors, optional values for partial
// updates, and the clock and id sources commands are given.
//
// The packages under domain/ are the aggregates (link, workspace, project,
// customdomain, apikey, click, reservation, user). They depend on the standard
// library and this package only; a test keeps it that way.
package domain
