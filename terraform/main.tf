locals {
  logs_bucket     = "${var.bucket}-logs"
  releases_bucket = "${var.bucket}-releases"
  private_bucket  = "${var.bucket}-private"
  access_logs     = "${var.bucket}-access-logs"
  image           = "${var.region}-docker.pkg.dev/${var.project}/${google_artifact_registry_repository.images.repository_id}/urania-beam:${var.image_tag}"
  template_spec   = "gs://${local.private_bucket}/templates/urania-beam.json"

  # Parameters of the nightly Flex Template launch; every name is an option of beam_jobs.insights.
  # private_output holds every run's private/, with the release gate's release.pending/ and
  # release.rejected/: nothing unreviewed is ever written to the releases bucket.
  launch_parameters = {
    input                  = "gs://${local.logs_bucket}/dt={date}/*.jsonl"
    output                 = "gs://${local.releases_bucket}/insights"
    private_output         = "gs://${local.private_bucket}/insights"
    date                   = "yesterday"
    privacy_ledger         = "gs://${local.private_bucket}/ledger/privacy_ledger.json"
    max_epsilon_per_window = tostring(var.max_epsilon_per_window)
    window_days            = tostring(var.window_days)
    num_clusters           = tostring(var.num_clusters)
  }
}

resource "google_project_service" "apis" {
  for_each = toset([
    "artifactregistry.googleapis.com",
    "cloudscheduler.googleapis.com",
    "dataflow.googleapis.com",
    "storage.googleapis.com",
  ])
  service            = each.value
  disable_on_destroy = false
}

# Buckets: raw logs in, releases out, and private outputs with tighter access and short retention.
# Every read and write of the three is recorded in the access-logs bucket (Cloud Storage usage logs).
resource "google_storage_bucket" "logs" {
  #checkov:skip=CKV_GCP_78:Versioning would keep deleted raw conversation logs as noncurrent versions past log_retention_days; the job only reads this bucket.
  name                        = local.logs_bucket
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"

  logging {
    log_bucket = google_storage_bucket.access_logs.name
  }

  lifecycle_rule {
    condition {
      age = var.log_retention_days
    }
    action {
      type = "Delete"
    }
  }
}

resource "google_storage_bucket" "releases" {
  name                        = local.releases_bucket
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"

  logging {
    log_bucket = google_storage_bucket.access_logs.name
  }

  versioning {
    enabled = true
  }
}

resource "google_storage_bucket" "private" {
  name                        = local.private_bucket
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"

  logging {
    log_bucket = google_storage_bucket.access_logs.name
  }

  # The ledger must keep its history: object versions are kept, and only outputs expire.
  versioning {
    enabled = true
  }

  lifecycle_rule {
    condition {
      age            = var.private_retention_days
      matches_prefix = ["insights/"]
    }
    action {
      type = "Delete"
    }
  }

  # A deleted or overwritten output (an expired one, a pending release moved to the releases bucket)
  # would otherwise stay as a noncurrent version for ever: outputs keep no history.
  lifecycle_rule {
    condition {
      days_since_noncurrent_time = 1
      matches_prefix             = ["insights/"]
    }
    action {
      type = "Delete"
    }
  }
}

# Cloud Storage usage logs of the three buckets above: who read or wrote which object, when. They
# name objects (dates, run ids), never their content.
resource "google_storage_bucket" "access_logs" {
  #checkov:skip=CKV_GCP_62:This is the bucket the others log to; logging it into itself would log its own log writes.
  #checkov:skip=CKV_GCP_78:Only Cloud Storage's log service writes here, once per object; versions would keep expired logs past access_log_retention_days.
  name                        = local.access_logs
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"

  lifecycle_rule {
    condition {
      age = var.access_log_retention_days
    }
    action {
      type = "Delete"
    }
  }
}

# The usage-log writer: Google's cloud-storage-analytics group may create log objects, nothing else.
resource "google_storage_bucket_iam_member" "analytics_writes_access_logs" {
  bucket = google_storage_bucket.access_logs.name
  role   = "roles/storage.objectCreator"
  member = "group:cloud-storage-analytics@google.com"
}

resource "google_artifact_registry_repository" "images" {
  #checkov:skip=CKV_GCP_84:The image holds only this repository's code and public packages and model weights, no private data; Google-managed encryption suffices.
  location      = var.region
  repository_id = "urania-beam"
  description   = "Flex Template image: launcher and Dataflow SDK container."
  format        = "DOCKER"
  depends_on    = [google_project_service.apis]
}

# The job's identity: Dataflow worker, reads logs, writes releases and private outputs. Nothing else.
resource "google_service_account" "pipeline" {
  account_id   = "urania-pipeline"
  display_name = "urania-beam Dataflow workers and launcher"
}

resource "google_project_iam_member" "pipeline_dataflow_worker" {
  project = var.project
  role    = "roles/dataflow.worker"
  member  = "serviceAccount:${google_service_account.pipeline.email}"
}

resource "google_storage_bucket_iam_member" "pipeline_reads_logs" {
  bucket = google_storage_bucket.logs.name
  role   = "roles/storage.objectViewer"
  member = "serviceAccount:${google_service_account.pipeline.email}"
}

resource "google_storage_bucket_iam_member" "pipeline_writes_releases" {
  bucket = google_storage_bucket.releases.name
  role   = "roles/storage.objectAdmin"
  member = "serviceAccount:${google_service_account.pipeline.email}"
}

resource "google_storage_bucket_iam_member" "pipeline_writes_private" {
  bucket = google_storage_bucket.private.name
  role   = "roles/storage.objectAdmin"
  member = "serviceAccount:${google_service_account.pipeline.email}"
}

resource "google_artifact_registry_repository_iam_member" "pipeline_pulls_image" {
  location   = google_artifact_registry_repository.images.location
  repository = google_artifact_registry_repository.images.name
  role       = "roles/artifactregistry.reader"
  member     = "serviceAccount:${google_service_account.pipeline.email}"
}

# The scheduler's identity: may launch Dataflow jobs that run as the pipeline account, nothing more.
resource "google_service_account" "scheduler" {
  account_id   = "urania-scheduler"
  display_name = "urania-beam nightly launcher (Cloud Scheduler)"
}

resource "google_project_iam_member" "scheduler_launches_dataflow" {
  #checkov:skip=CKV_GCP_49:Dataflow has no job-level IAM, so launching a Flex Template needs this role on the project; the only account it can run jobs as is the pipeline's (scheduler_acts_as_pipeline is granted on that account alone).
  project = var.project
  role    = "roles/dataflow.developer"
  member  = "serviceAccount:${google_service_account.scheduler.email}"
}

resource "google_service_account_iam_member" "scheduler_acts_as_pipeline" {
  service_account_id = google_service_account.pipeline.name
  role               = "roles/iam.serviceAccountUser"
  member             = "serviceAccount:${google_service_account.scheduler.email}"
}

resource "google_storage_bucket_iam_member" "scheduler_reads_template_spec" {
  bucket = google_storage_bucket.private.name
  role   = "roles/storage.objectViewer"
  member = "serviceAccount:${google_service_account.scheduler.email}"
}

# Nightly: Cloud Scheduler calls flexTemplates:launch with date=yesterday (resolved by the job in UTC).
resource "google_cloud_scheduler_job" "nightly" {
  name        = "urania-beam-nightly"
  region      = var.region
  schedule    = var.schedule
  time_zone   = var.time_zone
  description = "Nightly DP topic insights over yesterday's logs."
  depends_on  = [google_project_service.apis]

  retry_config {
    retry_count = 0
  }

  http_target {
    http_method = "POST"
    uri         = "https://dataflow.googleapis.com/v1b3/projects/${var.project}/locations/${var.region}/flexTemplates:launch"
    headers = {
      "Content-Type" = "application/json"
    }
    body = base64encode(jsonencode({
      launchParameter = {
        jobName              = "urania-beam-nightly"
        containerSpecGcsPath = local.template_spec
        parameters           = local.launch_parameters
        environment = {
          serviceAccountEmail = google_service_account.pipeline.email
          sdkContainerImage   = local.image
          tempLocation        = "gs://${local.private_bucket}/tmp"
          stagingLocation     = "gs://${local.private_bucket}/staging"
        }
      }
    }))

    oauth_token {
      service_account_email = google_service_account.scheduler.email
      scope                 = "https://www.googleapis.com/auth/cloud-platform"
    }
  }
}
