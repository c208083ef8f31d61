package auth

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// AWSProfile is a named profile of ~/.aws/config or ~/.aws/credentials with its configured region.
type AWSProfile struct {
	Name   string
	Region string // "" when the profile sets none
}

// AWSEnvCredential is a credential found in the environment: "accessKeys" or "bedrockApiKey".
type AWSEnvCredential struct {
	Type   string
	Region string
}

// awsFiles returns the config and credentials file paths (AWS_CONFIG_FILE / AWS_SHARED_CREDENTIALS_FILE
// override the ~/.aws defaults).
func awsFiles(getenv func(string) string) (string, string) {
	home, _ := os.UserHomeDir()
	if h := getenv("HOME"); h != "" {
		home = h
	}
	cfg, creds := getenv("AWS_CONFIG_FILE"), getenv("AWS_SHARED_CREDENTIALS_FILE")
	if cfg == "" {
		cfg = filepath.Join(home, ".aws", "config")
	}
	if creds == "" {
		creds = filepath.Join(home, ".aws", "credentials")
	}
	return cfg, creds
}

// readINI parses an AWS-style INI file into section → key → value.
func readINI(path string) map[string]map[string]string {
	out := map[string]map[string]string{}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	cur := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			cur = strings.TrimSpace(line[1 : len(line)-1])
			if out[cur] == nil {
				out[cur] = map[string]string{}
			}
		case cur != "":
			if k, v, ok := strings.Cut(line, "="); ok {
				out[cur][strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
	}
	return out
}

// DiscoverAWS lists the AWS profiles (sorted by name) and the credentials the environment holds.
func DiscoverAWS(getenv func(string) string) ([]AWSProfile, []AWSEnvCredential) {
	if getenv == nil {
		getenv = os.Getenv
	}
	cfgPath, credPath := awsFiles(getenv)
	regions := map[string]string{}
	for sec, kv := range readINI(cfgPath) {
		name, ok := sec, sec == "default"
		if !ok {
			name, ok = strings.CutPrefix(sec, "profile ")
			name = strings.TrimSpace(name)
		}
		if ok {
			regions[name] = kv["region"]
		}
	}
	for sec := range readINI(credPath) {
		if _, ok := regions[sec]; !ok {
			regions[sec] = ""
		}
	}
	profiles := make([]AWSProfile, 0, len(regions))
	for n, r := range regions {
		profiles = append(profiles, AWSProfile{Name: n, Region: r})
	}
	sort.Slice(profiles, func(i, j int) bool { return profiles[i].Name < profiles[j].Name })
	region := getenv("AWS_REGION")
	if region == "" {
		region = getenv("AWS_DEFAULT_REGION")
	}
	var env []AWSEnvCredential
	if getenv("AWS_ACCESS_KEY_ID") != "" && getenv("AWS_SECRET_ACCESS_KEY") != "" {
		env = append(env, AWSEnvCredential{Type: "accessKeys", Region: region})
	}
	if getenv("AWS_BEARER_TOKEN_BEDROCK") != "" {
		env = append(env, AWSEnvCredential{Type: "bedrockApiKey", Region: region})
	}
	return profiles, env
}

// CheckAWSProfile verifies that a profile has static credentials in the credentials file.
func CheckAWSProfile(getenv func(string) string, profile string) error {
	if getenv == nil {
		getenv = os.Getenv
	}
	_, credPath := awsFiles(getenv)
	kv, ok := readINI(credPath)[profile]
	prefix := fmt.Sprintf("failed to load credentials for AWS profile `%s`: failed to load AWS credentials: ", profile)
	switch {
	case !ok:
		return fmt.Errorf("%sthe credential provider was not enabled", prefix)
	case kv["aws_access_key_id"] == "" || kv["aws_secret_access_key"] == "":
		return fmt.Errorf("%sthe credentials provider was not properly configured", prefix)
	}
	return nil
}

// bedrockRegions are the AWS regions that serve Amazon Bedrock.
var bedrockRegions = map[string]bool{
	"us-east-1": true, "us-east-2": true, "us-west-1": true, "us-west-2": true, "us-gov-east-1": true, "us-gov-west-1": true,
	"ca-central-1": true, "sa-east-1": true, "eu-central-1": true, "eu-central-2": true, "eu-west-1": true, "eu-west-2": true,
	"eu-west-3": true, "eu-north-1": true, "eu-south-1": true, "eu-south-2": true, "ap-northeast-1": true, "ap-northeast-2": true,
	"ap-northeast-3": true, "ap-south-1": true, "ap-south-2": true, "ap-southeast-1": true, "ap-southeast-2": true,
	"ap-southeast-3": true, "ap-southeast-4": true, "me-central-1": true, "me-south-1": true, "il-central-1": true, "af-south-1": true,
}

// CheckBedrockRegion refuses a region without Amazon Bedrock.
func CheckBedrockRegion(region string) error {
	if !bedrockRegions[region] {
		return fmt.Errorf("Amazon Bedrock does not support region `%s`", region)
	}
	return nil
}
