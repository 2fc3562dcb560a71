// Command pgvariant prepares a database for bench/pg-variant.sh: it drops
// and creates the database -db on the server -url names, creates linkd's
// schema in it (as linkd serve would at start), applies the SQL of -sql if
// given (one of bench/pg-variants), and prints the connection string of
// the new database for LINKD_EVENTSTORE. The SQL is applied before linkd
// starts, so that the statements linkd prepares see the altered schema.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/url"
	"os"

	"github.com/jackc/pgx/v5"

	"github.com/linkd/linkd/eventstore/postgres"
)

func main() {
	server := flag.String("url", "", "connection string of a database on the server (postgres://...), used to drop and create -db")
	db := flag.String("db", "linkd_variant", "the database to create afresh")
	sqlFile := flag.String("sql", "", "SQL to apply after the schema (a file of bench/pg-variants)")
	flag.Parse()
	ctx := context.Background()
	if *server == "" {
		log.Fatal("pgvariant: -url is needed")
	}
	conn, err := pgx.Connect(ctx, *server)
	if err != nil {
		log.Fatal(err)
	}
	ident := pgx.Identifier{*db}.Sanitize()
	for _, q := range []string{"DROP DATABASE IF EXISTS " + ident + " WITH (FORCE)", "CREATE DATABASE " + ident} {
		if _, err := conn.Exec(ctx, q); err != nil {
			log.Fatalf("pgvariant: %s: %v", q, err)
		}
	}
	conn.Close(ctx)
	u, err := url.Parse(*server)
	if err != nil {
		log.Fatal(err)
	}
	u.Path = "/" + *db
	store := u.String()
	if err := postgres.Migrate(ctx, store); err != nil {
		log.Fatal(err)
	}
	if *sqlFile != "" {
		sql, err := os.ReadFile(*sqlFile)
		if err != nil {
			log.Fatal(err)
		}
		conn, err := pgx.Connect(ctx, store)
		if err != nil {
			log.Fatal(err)
		}
		// Simple protocol: the file may hold several statements.
		if _, err := conn.PgConn().Exec(ctx, string(sql)).ReadAll(); err != nil {
			log.Fatalf("pgvariant: %s: %v", *sqlFile, err)
		}
		conn.Close(ctx)
	}
	fmt.Println(store)
}
