# LiveVisits image: built and run on the official Swift image (Debian), with the -dev packages of the C
# libraries it links (libpq, OpenSSL, libmicrohttpd, libnghttp2, libcurl). The runtime
# image also has curl (health checks) and the openssl CLI (docker-compose.yml's `credentials` step
# generates the throw-away signing key and the simulator's certificate with it).
FROM swift:6.3-bookworm AS build
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        pkg-config libpq-dev libssl-dev libmicrohttpd-dev libnghttp2-dev libcurl4-openssl-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
COPY Sources ./Sources
COPY Tests ./Tests
RUN swift build -c release --product livevisits \
    && cp "$(swift build -c release --show-bin-path)/livevisits" /usr/local/bin/livevisits

FROM swift:6.3-bookworm-slim
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        libpq5 libssl3 libcurl4 libmicrohttpd12 libnghttp2-14 curl ca-certificates openssl \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=build /usr/local/bin/livevisits /usr/local/bin/livevisits
COPY Migrations ./Migrations
COPY Projections ./Projections
ENV LIVEVISITS_PROJECTIONS_DIR=/app/Projections
# The mount point of docker-compose.yml's credentials volume, owned by the user the services run as.
RUN mkdir /credentials && chown nobody:nogroup /credentials
USER nobody
EXPOSE 8080
ENTRYPOINT ["livevisits"]
CMD ["serve"]
