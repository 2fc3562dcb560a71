package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/linkd/linkd/cmd/linkd/app"
)

func generateCmd() *cobra.Command {
	var o app.GenerateOptions
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Write synthetic links and clicks through the real write path (benchmarks, demos; stop linkd serve first)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config(cmd)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			governHeap(ctx)
			return app.Generate(ctx, cfg, app.NewLogger(cfg, os.Stderr), o, os.Stdout)
		},
	}
	cmd.Flags().IntVar(&o.Workspaces, "workspaces", 10, "workspaces to create")
	cmd.Flags().IntVar(&o.Links, "links", 1000, "links to create")
	cmd.Flags().IntVar(&o.Clicks, "clicks", 100000, "clicks to record")
	cmd.Flags().IntVar(&o.Days, "days", 30, "spread clicks over this many past days")
	cmd.Flags().IntVar(&o.Workers, "workers", 64, "concurrent writers")
	cmd.Flags().Int64Var(&o.Seed, "seed", 1, "random seed")
	cmd.Flags().BoolVar(&o.Tracking, "tracking", false, "give every click a tracking id (svc_tid), as links with conversion tracking do")
	cmd.Flags().StringVar(&o.TrackingIDsOut, "tracking-ids-out", "", "write a sample of the tracking ids (at most 100,000, one per line) to this file")
	return cmd
}
