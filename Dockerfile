# scopecast: one image for the web processes and the worker (see Procfile, docker-compose.yml).
# Build: docker build -t scopecast .   Run: docker run -p 8545:8545 -e SCOPECAST_API_KEYS=k scopecast
FROM python:3.11-slim AS build
WORKDIR /src
# The dependencies as locked (exact versions, checked against their hashes), then scopecast on top.
COPY requirements/run.lock ./requirements/
RUN pip install --no-cache-dir --prefix=/install --require-hashes -r requirements/run.lock
COPY pyproject.toml README.md ./
COPY broker ./broker
COPY adapters ./adapters
COPY schemas ./schemas
RUN pip install --no-cache-dir --prefix=/install --no-deps .

FROM python:3.11-slim
COPY --from=build /install /usr/local
RUN useradd --create-home --uid 10001 scopecast
USER 10001
WORKDIR /home/scopecast
ENV PYTHONUNBUFFERED=1 PORT=8545
EXPOSE 8545
ENTRYPOINT ["scopecast"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8545"]
