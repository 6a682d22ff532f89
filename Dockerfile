# kwrec in a container image, for the flight recorder in deploy/ (see the
# README, "Record a cluster from inside it"):
#
#   docker build -t kwrec:dev .
#   docker build --build-arg VERSION=v0.2.0 -t registry.example.com/kwrec:v0.2.0 .
#
# Two stages: the official Go image builds a static binary (CGO_ENABLED=0,
# no libc needed), and the image is scratch with that binary alone, run as
# an unprivileged user (65532, "nonroot"), plus busybox's static tar as
# /bin/tar: kubectl cp runs tar inside the container to copy a recording
# out. No shell, no package manager, nothing else.

FROM golang:1.26 AS build
WORKDIR /src
# The modules first: a source change reuses this layer.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=v0.1.0-dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/kwrec ./cmd/kwrec

# busybox's musl build is statically linked: it runs in scratch.
FROM busybox:1.37.0-musl AS tar

FROM scratch
COPY --from=build /out/kwrec /kwrec
COPY --from=tar /bin/busybox /bin/tar
ENV PATH=/bin HOME=/tmp
USER 65532:65532
ENTRYPOINT ["/kwrec"]
