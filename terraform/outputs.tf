output "logs_bucket" {
  value = google_storage_bucket.logs.name
}

output "releases_bucket" {
  value = google_storage_bucket.releases.name
}

output "private_bucket" {
  value = google_storage_bucket.private.name
}

output "access_logs_bucket" {
  value = google_storage_bucket.access_logs.name
}

output "image" {
  value = local.image
}

output "template_spec" {
  value = local.template_spec
}

output "pipeline_service_account" {
  value = google_service_account.pipeline.email
}
