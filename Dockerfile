# scopecast: one image for the web processes and the worker (see Procfile, docker-compose.yml).
# Build: docker build -t scopecast .   Run: docker run -p 8545:8545 -e SCOPECAST_API_KEYS=k scopecast
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY broker ./broker
COPY adapters ./adapters
COPY schemas ./schemas
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim
COPY --from=build /install /usr/local
RUN useradd --create-home --uid 10001 scopecast
USER 10001
WORKDIR /home/scopecast
ENV PYTHONUNBUFFERED=1 PORT=8545
EXPOSE 8545
ENTRYPOINT ["scopecast"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8545"]
