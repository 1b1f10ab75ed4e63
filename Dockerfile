# finality as a container: the binary alone on a slim base, run as an
# unprivileged user. Build: docker build -t finality .
# (docs/OPERATIONS.md, "Container".)

FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p finality-cli \
 && strip target/release/finality

FROM debian:bookworm-slim
# CA certificates for the providers' HTTPS; nothing else.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /var/lib/finality --create-home finality
COPY --from=build /src/target/release/finality /usr/local/bin/finality
USER finality
WORKDIR /var/lib/finality
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/finality"]
CMD ["serve"]
