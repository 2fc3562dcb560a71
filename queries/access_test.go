package queries

import (
	"context"
	"testing"
	"time"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/internal/clock"
)

// fakeRead is a read model of two workspaces: w1 (alice) and w2 (bob).
type fakeRead struct {
	links   map[string]Link
	clicked map[string]bool
}

func (f fakeRead) Link(_ context.Context, id string) (Link, bool, error) {
	l, ok := f.links[id]
	return l, ok, nil
}

func (fakeRead) Role(_ context.Context, ws, user string) (string, error) {
	if (ws == "w1" && user == "alice") || (ws == "w2" && user == "bob") {
		return "owner", nil
	}
	return "", nil
}

func (fakeRead) Workspace(_ context.Context, id string) (Workspace, bool, error) {
	return Workspace{ID: id}, id == "w1" || id == "w2", nil
}

func (fakeRead) DefaultWorkspace(_ context.Context, user string) (Workspace, bool, error) {
	if user == "alice" {
		return Workspace{ID: "w1"}, true, nil
	}
	return Workspace{}, false, nil
}

func (f fakeRead) LinkClicked(_ context.Context, id string) (bool, error) { return f.clicked[id], nil }

func (fakeRead) LinkDaily(_ context.Context, id string, from, to time.Time) ([]DailyStats, error) {
	return []DailyStats{{Date: from.Format(time.DateOnly), LinkID: id, TotalClicks: 1}}, nil
}

func (fakeRead) WorkspaceDaily(_ context.Context, ws string, from, to time.Time) ([]DailyStats, error) {
	return []DailyStats{{Date: to.Format(time.DateOnly), WorkspaceID: ws, TotalClicks: 2}}, nil
}

func TestReadAccess(t *testing.T) {
	rm := fakeRead{
		links: map[string]Link{
			"l1": {ID: "l1"}, "l2": {ID: "l2"}, "pub": {ID: "pub"}, "quiet": {ID: "quiet"},
		},
		clicked: map[string]bool{"l1": true, "l2": true, "pub": true},
	}
	for id, ws := range map[string]string{"l1": "w1", "l2": "w2", "pub": "w2", "quiet": "w1"} {
		l := rm.links[id]
		l.WorkspaceID = ws
		l.HasPublicStat = id == "pub"
		rm.links[id] = l
	}
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC))
	byID := LinkByIDHandler{ReadModel: rm}
	daily := DailyLinkStatsHandler{ReadModel: rm, Clock: clk}
	wsDaily := DailyWorkspaceStatsHandler{ReadModel: rm, Clock: clk}

	kind := func(err error) domain.Kind { return domain.KindOf(err) }
	msg := func(err error) string {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	if _, err := byID.Handle(ctx, LinkByID{ID: "l1", UserID: "alice"}); err != nil {
		t.Errorf("own link: %v", err)
	}
	if _, err := byID.Handle(ctx, LinkByID{ID: "l2", UserID: "alice"}); kind(err) != domain.KindForbidden {
		t.Errorf("other workspace's link: %v", err)
	}
	if _, err := byID.Handle(ctx, LinkByID{ID: "zz", UserID: "alice"}); kind(err) != domain.KindNotFound || msg(err) != "Link not found" {
		t.Errorf("unknown link: %v", err)
	}
	cases := []struct {
		name, link, user, err string
	}{
		{"own clicked link", "l1", "alice", ""},
		{"other workspace", "l2", "alice", "Access denied to this link"},
		{"public statistics, any user", "pub", "alice", ""},
		{"never clicked", "quiet", "alice", "No stats found for this link"},
		{"unknown", "zz", "alice", "Link not found"},
	}
	for _, c := range cases {
		days, err := daily.Handle(ctx, DailyLinkStats{LinkID: c.link, UserID: c.user})
		if msg(err) != c.err {
			t.Errorf("%s: error %q, want %q", c.name, msg(err), c.err)
		}
		if c.err == "" && (len(days) != 1 || days[0].Date != "2026-10-25") {
			t.Errorf("%s: days %v", c.name, days)
		}
	}
	if days, err := wsDaily.Handle(ctx, DailyWorkspaceStats{UserID: "alice"}); err != nil || len(days) != 1 || days[0].WorkspaceID != "w1" || days[0].Date != "2026-11-24" {
		t.Errorf("default workspace: %v %v", days, err)
	}
	if days, err := wsDaily.Handle(ctx, DailyWorkspaceStats{UserID: "carol"}); err != nil || len(days) != 0 {
		t.Errorf("no default workspace: %v %v", days, err)
	}
	if _, err := wsDaily.Handle(ctx, DailyWorkspaceStats{WorkspaceID: "w2", UserID: "alice"}); msg(err) != domain.MsgAccessDeniedWorkspace {
		t.Errorf("other workspace: %v", err)
	}
	if _, err := wsDaily.Handle(ctx, DailyWorkspaceStats{WorkspaceID: "w9", UserID: "alice"}); msg(err) != "Workspace not found" {
		t.Errorf("unknown workspace: %v", err)
	}
	clk.Advance(24 * time.Hour)
	if days, _ := wsDaily.Handle(ctx, DailyWorkspaceStats{UserID: "alice"}); len(days) != 1 || days[0].Date != "2026-11-25" {
		t.Errorf("after the clock moved a day: %v", days)
	}
}
