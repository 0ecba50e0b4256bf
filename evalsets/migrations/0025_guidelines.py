from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("evalsets", "0024_adjudication"),
    ]

    operations = [
        migrations.AddField(
            model_name="evalset",
            name="guidelines",
            field=models.TextField(blank=True, default=""),
        ),
        migrations.AddField(
            model_name="evalset",
            name="qtypes",
            field=models.JSONField(blank=True, default=list),
        ),
    ]
