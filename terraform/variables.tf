variable "project" {
  description = "Google Cloud project id."
  type        = string
}

variable "region" {
  description = "Region for the buckets, the Artifact Registry repository, Dataflow and Cloud Scheduler."
  type        = string
  default     = "us-central1"
}

variable "bucket" {
  description = "Prefix of the bucket names: BUCKET-logs, BUCKET-releases and BUCKET-private."
  type        = string
}

variable "private_retention_days" {
  description = "Days before private outputs (dead letters, exact counts, assignments) are deleted."
  type        = number
  default     = 30
}

variable "access_log_retention_days" {
  description = "Days before the buckets' access logs (Cloud Storage usage logs) are deleted."
  type        = number
  default     = 365
}

variable "log_retention_days" {
  description = "Days before raw conversation logs are deleted."
  type        = number
  default     = 90
}

variable "schedule" {
  description = "Cron schedule of the nightly run (it processes yesterday's logs)."
  type        = string
  default     = "0 3 * * *"
}

variable "time_zone" {
  description = "Time zone of the schedule."
  type        = string
  default     = "Etc/UTC"
}

variable "image_tag" {
  description = "Tag of the Flex Template image in the Artifact Registry repository."
  type        = string
  default     = "latest"
}

variable "max_epsilon_per_window" {
  description = "Privacy budget cap per user over window_days; a run that would exceed it is refused."
  type        = number
  default     = 30
}

variable "window_days" {
  description = "Length of the privacy budget window in days."
  type        = number
  default     = 30
}

variable "num_clusters" {
  description = "Number of clusters k of the nightly run."
  type        = number
  default     = 50
}
