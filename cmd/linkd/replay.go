package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/linkd/linkd/cmd/linkd/app"
	"github.com/linkd/linkd/eventstore"
)

func replayCmd() *cobra.Command {
	var names []string
	cmd := &cobra.Command{
		Use:   "replay",
		Short: "Rebuild read models from the event store (stop linkd serve first)",
		Long: `Replay empties each chosen projection and applies the whole event log to it
again, ending with the read model live processing would have built.
Projections: core (links, workspaces, projects, domains, keys), the
statistics projection (analytics, or clickhouse when LINKD_CLICKHOUSE_DSN
is set), clickindex, radar (and clickhouse_radar), and webhooks (the
webhooks themselves, up to the events it had made messages of: a replay
sends nothing again; POST /v1/webhooks/{id}/replay does). Without
--projection, all of them.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config(cmd)
			if err != nil {
				return err
			}
			log := app.NewLogger(cfg, os.Stderr)
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			governHeap(ctx)
			var bar *progressbar.ProgressBar
			var current string
			progress := func(name string, reached, head eventstore.Position, events uint64) {
				if !term.IsTerminal(int(os.Stderr.Fd())) {
					return
				}
				if bar == nil || current != name {
					if bar != nil {
						_ = bar.Finish()
					}
					current = name
					bar = progressbar.NewOptions64(int64(head.Commit),
						progressbar.OptionSetDescription("replay "+name),
						progressbar.OptionSetWriter(os.Stderr),
						progressbar.OptionShowCount(),
						progressbar.OptionThrottle(100_000_000),
						progressbar.OptionClearOnFinish())
				}
				_ = bar.Set64(int64(reached.Commit))
			}
			err = app.Replay(ctx, cfg, log, names, progress, os.Stdout)
			if bar != nil {
				_ = bar.Finish()
			}
			return err
		},
	}
	cmd.Flags().StringSliceVar(&names, "projection", nil, "projection to rebuild (repeatable; default all)")
	return cmd
}
